// Package iptables is the project's stand-in for sigs.k8s.io/iptables-wrappers/pkg/iptables:
// only the names its callers at k8s.io/kubernetes@v1.38.0-beta.0 use, written from those
// callers: the kubelet (pkg/kubelet/kubelet_network_linux.go) and kube-proxy
// (cmd/kube-proxy/app/server_linux.go, pkg/proxy/iptables, pkg/proxy/ipvs). No upstream code
// is copied.
//
// It behaves as a host without iptables. NewBestEffort returns no client: the kubelet logs "No
// iptables support on this system" and goes on, and kube-proxy's nftables mode skips the
// clean-up of iptables and ipvs rules (it has nothing to clean on a fresh node). New returns an
// error naming the stand-in, so kube-proxy in iptables or ipvs mode refuses to start ("iptables
// is not available on this host") instead of running without rules. A binary built with it
// therefore never writes an iptables rule, even where iptables is installed: the one
// difference from upstream.
package iptables

import (
	"bytes"
	"context"
	"errors"
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

// Mode says which iptables binaries a constructor looks for.
type Mode string

const (
	TableMangle Table = "mangle"
	TableNAT    Table = "nat"
	TableFilter Table = "filter"

	ChainInput       Chain = "INPUT"
	ChainOutput      Chain = "OUTPUT"
	ChainForward     Chain = "FORWARD"
	ChainPrerouting  Chain = "PREROUTING"
	ChainPostrouting Chain = "POSTROUTING"

	Prepend RulePosition = "-I"
	Append  RulePosition = "-A"

	ProtocolIPv4 Protocol = "IPv4"
	ProtocolIPv6 Protocol = "IPv6"

	// UseInstalledMode: whichever iptables the host has (the kubelet's choice).
	UseInstalledMode Mode = "installed"
	// DetectHostMode: the iptables the host's rules were written with (kube-proxy's choice).
	DetectHostMode Mode = "detect"
)

// ErrNoIptables is what New and every operation of the client it returns answer with.
var ErrNoIptables = errors.New("no iptables: sigs.k8s.io/iptables-wrappers is the dra-harness " +
	"stand-in (controlplane/iptables-wrappers), the module proxy refuses the real module's source; " +
	"use kube-proxy's nftables mode")

// Interface is what the kubelet and kube-proxy call on a client.
type Interface interface {
	EnsureChain(ctx context.Context, table Table, chain Chain) (bool, error)
	FlushChain(ctx context.Context, table Table, chain Chain) error
	DeleteChain(ctx context.Context, table Table, chain Chain) error
	EnsureRule(ctx context.Context, position RulePosition, table Table, chain Chain, args ...string) (bool, error)
	DeleteRule(ctx context.Context, table Table, chain Chain, args ...string) error
	IsIPv6() bool
	Protocol() Protocol
	SaveInto(ctx context.Context, table Table, buffer *bytes.Buffer) error
	Restore(ctx context.Context, data []byte) error
	Monitor(ctx context.Context, canary Chain, tables []Table, reloadFunc func(), interval time.Duration)
}

// ParseError is an iptables-restore failure that names the input line it stopped at.
type ParseError interface {
	error
	Line() int
}

// New returns a client of one IP family, or an error when the host has no working iptables:
// in this stand-in always that error, with a client whose every operation fails the same way
// (never nil, so a caller that ignores the error still gets a loud failure, not a panic).
func New(_ context.Context, protocol Protocol, _ Mode) (Interface, error) {
	return absent{protocol}, ErrNoIptables
}

// NewBestEffort returns a client per IP family that has a working iptables: in this stand-in
// none, so its callers take their no-iptables path.
func NewBestEffort(_ context.Context, _ Mode) map[Protocol]Interface {
	return map[Protocol]Interface{}
}

// IsNotFoundError says whether err is iptables' answer for a chain or rule that does not
// exist (what clean-up code ignores). The stand-in's own error is not one.
func IsNotFoundError(err error) bool {
	if err == nil || errors.Is(err, ErrNoIptables) {
		return false
	}
	msg := err.Error()
	// The iptables commands' own words for a missing chain and a missing rule.
	return bytes.Contains([]byte(msg), []byte("No chain/target/match by that name")) ||
		bytes.Contains([]byte(msg), []byte("does a matching rule exist"))
}

// absent is the client of a host without iptables.
type absent struct{ protocol Protocol }

func (absent) EnsureChain(context.Context, Table, Chain) (bool, error) { return false, ErrNoIptables }
func (absent) FlushChain(context.Context, Table, Chain) error          { return ErrNoIptables }
func (absent) DeleteChain(context.Context, Table, Chain) error         { return ErrNoIptables }
func (absent) EnsureRule(context.Context, RulePosition, Table, Chain, ...string) (bool, error) {
	return false, ErrNoIptables
}
func (absent) DeleteRule(context.Context, Table, Chain, ...string) error { return ErrNoIptables }
func (a absent) IsIPv6() bool                                            { return a.protocol == ProtocolIPv6 }
func (a absent) Protocol() Protocol                                      { return a.protocol }
func (absent) SaveInto(context.Context, Table, *bytes.Buffer) error      { return ErrNoIptables }
func (absent) Restore(context.Context, []byte) error                     { return ErrNoIptables }

// Monitor returns at once: there are no rules whose loss it could watch for.
func (absent) Monitor(context.Context, Chain, []Table, func(), time.Duration) {}
