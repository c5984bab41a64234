// The project's stand-in for sigs.k8s.io/iptables-wrappers, used by the 1.38 kubelet's modfile
// (controlplane/mod/1.38.mod `replace`) only while the module proxy refuses the real module's
// source (v1.0.0: .info and .mod served, .zip 403 on 2026-12-07). Drop it the day
// `go mod download sigs.k8s.io/iptables-wrappers@v1.0.0` succeeds: regenerating the modfile
// (python -m harness.controlplane.modfile 1.38) then leaves the replace out by itself.
module sigs.k8s.io/iptables-wrappers

go 1.26

// The real v1.0.0's .mod (served by the proxy) requires this version; the stand-in's
// GetChainsFromTable returns its set.Set, as the callers expect.
require k8s.io/utils v0.0.0-20260626114624-be93311217bd
