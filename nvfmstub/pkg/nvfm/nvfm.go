// Package nvfm stands in for github.com/NVIDIA/go-nvfm@v0.1.0, which
// sigs.k8s.io/dra-driver-nvidia-gpu@v0.5.0 pins and the Go module proxy does not serve (its
// .zip answers 403). It has the API pkg/fabricmanager/client_nvfm.go @ v0.5.0 calls, and every
// call answers ERROR_LIBRARY_NOT_FOUND, as the bindings do with no libnvfm.so: the GPU plugin
// opens Fabric Manager only under its FabricManagerPartitioning gate (alpha, off;
// cmd/gpu-kubelet-plugin/device_state.go newFabricManager @ v0.5.0), which the harness never
// sets. Built into v0.5.0's plugin through a go.work replace (harness/controlplane/driverparts.py).
package nvfm

// Return is an FM call's status.
type Return int32

const (
	SUCCESS                 Return = 0
	ERROR_LIBRARY_NOT_FOUND Return = -1
)

func (r Return) String() string {
	if r == SUCCESS {
		return "SUCCESS"
	}
	return "libnvfm.so not found (dra-harness stand-in for go-nvfm v0.1.0)"
}

// FabricPartitionId names a partition.
type FabricPartitionId uint32

// FabricPartitionGpuInfo is one GPU of a partition.
type FabricPartitionGpuInfo struct {
	PhysicalId          uint32
	Uuid                [80]int8
	PciBusId            [32]int8
	NumNvLinksAvailable uint32
	MaxNumNvLinks       uint32
	NvlinkLineRateMBps  uint32
}

// FabricPartitionInfo is one partition.
type FabricPartitionInfo struct {
	PartitionId uint32
	IsActive    uint32
	NumGpus     uint32
	GpuInfo     [8]FabricPartitionGpuInfo
}

// FabricPartitionList is what GetSupportedFabricPartitions returns.
type FabricPartitionList struct {
	Version       uint32
	NumPartitions uint32
	MaxNumHops    uint32
	PartitionInfo [64]FabricPartitionInfo
}

type libraryOptions struct{ path string }

// LibraryOption configures New.
type LibraryOption func(*libraryOptions)

// WithLibraryPath names the libnvfm.so to load.
func WithLibraryPath(path string) LibraryOption { return func(o *libraryOptions) { o.path = path } }

type connectOptions struct {
	address   string
	unix      bool
	timeoutMs uint32
}

// ConnectOption configures Connect.
type ConnectOption func(*connectOptions)

// WithUnixSocket connects over a Unix socket.
func WithUnixSocket(path string) ConnectOption {
	return func(o *connectOptions) { o.address, o.unix = path, true }
}

// WithAddress connects over TCP.
func WithAddress(address string) ConnectOption {
	return func(o *connectOptions) { o.address = address }
}

// WithTimeoutMs bounds the connect.
func WithTimeoutMs(ms uint32) ConnectOption { return func(o *connectOptions) { o.timeoutMs = ms } }

// Handle is a connection to Fabric Manager.
type Handle interface {
	Disconnect() Return
	GetSupportedFabricPartitions() (FabricPartitionList, Return)
	ActivateFabricPartition(FabricPartitionId) Return
	DeactivateFabricPartition(FabricPartitionId) Return
}

// Interface is the library.
type Interface interface {
	Init() Return
	Shutdown() Return
	Connect(...ConnectOption) (Handle, Return)
}

type library struct{ options libraryOptions }

// New returns the library; nothing is loaded.
func New(opts ...LibraryOption) Interface {
	l := &library{}
	for _, o := range opts {
		o(&l.options)
	}
	return l
}

func (l *library) Init() Return     { return ERROR_LIBRARY_NOT_FOUND }
func (l *library) Shutdown() Return { return ERROR_LIBRARY_NOT_FOUND }

func (l *library) Connect(opts ...ConnectOption) (Handle, Return) {
	return handle{}, ERROR_LIBRARY_NOT_FOUND
}

type handle struct{}

func (handle) Disconnect() Return { return ERROR_LIBRARY_NOT_FOUND }
func (handle) GetSupportedFabricPartitions() (FabricPartitionList, Return) {
	return FabricPartitionList{}, ERROR_LIBRARY_NOT_FOUND
}
func (handle) ActivateFabricPartition(FabricPartitionId) Return   { return ERROR_LIBRARY_NOT_FOUND }
func (handle) DeactivateFabricPartition(FabricPartitionId) Return { return ERROR_LIBRARY_NOT_FOUND }
