// Package iptables is the project's stand-in for sigs.k8s.io/iptables-wrappers/pkg/iptables:
// only the names the kubelet uses, written from its one caller,
// k8s.io/kubernetes@v1.38.0-beta.0 pkg/kubelet/kubelet_network_linux.go (initNetworkUtil,
// syncIPTablesRules). No upstream code is copied.
//
// NewBestEffort returns no client, the path upstream's kubelet takes on a host without
// iptables: it logs "No iptables support on this system; not creating the KUBE-IPTABLES-HINT
// chain" and goes on (the kubelet does not need these rules itself). A kubelet built with it
// therefore never creates KUBE-IPTABLES-HINT, KUBE-FIREWALL or KUBE-KUBELET-CANARY, even where
// iptables is installed: the one difference from the upstream kubelet.
package iptables

import (
	"context"
	"time"
)

// Table names an iptables table.
type Table string

// Chain names an iptables chain.
type Chain string

// RulePosition says where EnsureRule puts a missing rule.
type RulePosition string

// Protocol is the IP family a client works on.
type Protocol string

// Mode says which iptables binaries NewBestEffort looks for.
type Mode string

const (
	TableMangle Table = "mangle"
	TableNAT    Table = "nat"
	TableFilter Table = "filter"

	ChainInput  Chain = "INPUT"
	ChainOutput Chain = "OUTPUT"

	Prepend RulePosition = "-I"
	Append  RulePosition = "-A"

	ProtocolIPv4 Protocol = "IPv4"
	ProtocolIPv6 Protocol = "IPv6"

	// UseInstalledMode: whichever iptables the host has (the kubelet's choice).
	UseInstalledMode Mode = "installed"
)

// Interface is what the kubelet calls on a client NewBestEffort returned.
type Interface interface {
	EnsureChain(ctx context.Context, table Table, chain Chain) (bool, error)
	EnsureRule(ctx context.Context, position RulePosition, table Table, chain Chain, args ...string) (bool, error)
	IsIPv6() bool
	Protocol() Protocol
	Monitor(ctx context.Context, canary Chain, tables []Table, reloadFunc func(), interval time.Duration)
}

// NewBestEffort returns a client per IP family that has a working iptables: in this stand-in
// none, so its callers take their no-iptables path.
func NewBestEffort(_ context.Context, _ Mode) map[Protocol]Interface {
	return map[Protocol]Interface{}
}
