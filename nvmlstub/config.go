// Package main is a stand-in for libnvidia-ml.so.1: the NVML C functions NVIDIA's DRA kubelet
// plugin (sigs.k8s.io/dra-driver-nvidia-gpu@v0.4.1) and the go-nvlib it uses (v0.11.0) call,
// answered from a JSON file the harness writes per node from a fake_driver GPU profile.
//
// The C types and prototypes are those of nvml.h as shipped in github.com/NVIDIA/go-nvml
// @v0.13.1-0 pkg/nvml (the version the plugin's go.mod pins); the build passes that header's
// directory with -I (harness/controlplane/nvidiaparts.py), nothing of it is copied here.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
)

// ConfigEnv names the JSON file with the devices; CallsEnv, when set, a file each NVML function
// name is appended to the first time it is called.
const (
	ConfigEnv = "DRA_HARNESS_NVML_CONFIG"
	CallsEnv  = "DRA_HARNESS_NVML_CALLS"
)

// Config is what the harness writes (harness/clusters/realnodes/nvidiaroot.py).
type Config struct {
	DriverVersion     string `json:"driverVersion"`
	NVMLVersion       string `json:"nvmlVersion"`
	CudaDriverVersion int    `json:"cudaDriverVersion"` // 12080 = 12.8, as NVML reports it
	// nvidia-caps' major (the root's copy of /proc/devices names it): the capability device
	// nodes of the MIG devices DynamicMIG creates (migstate.go makeCapability).
	CapsMajor int   `json:"capsMajor,omitempty"`
	Devices   []GPU `json:"devices"`
}

// GPU is one full GPU.
type GPU struct {
	Name           string `json:"name"`
	UUID           string `json:"uuid"`
	Serial         string `json:"serial"`
	Minor          int    `json:"minor"`
	MemoryBytes    uint64 `json:"memoryBytes"`
	Architecture   string `json:"architecture"` // go-nvlib GetArchitectureAsString: "Hopper"
	Brand          string `json:"brand"`        // go-nvlib GetBrandAsString: "Nvidia"
	CCMajor        int    `json:"ccMajor"`
	CCMinor        int    `json:"ccMinor"`
	PCIBusID       string `json:"pciBusId"`       // "0000:1b:00.0"
	PCIDeviceID    uint32 `json:"pciDeviceId"`    // device id << 16 | vendor id
	AddressingMode string `json:"addressingMode"` // "HMM", "ATS", "None", "" = not supported
	// MIG (mig.go): the GPU-instance profiles the part offers (none = not MIG-capable), whether
	// MIG mode is on, and the MIG devices created on it (static MIG: one full-size compute
	// instance per GPU instance).
	MigProfiles []MigProfile `json:"migProfiles,omitempty"`
	MigEnabled  bool         `json:"migEnabled,omitempty"`
	// The plugin's DynamicMIG may create MIG devices on it: it names the profiles it publishes.
	MigDynamic bool        `json:"migDynamic,omitempty"`
	MigDevices []MigDevice `json:"migDevices,omitempty"`
}

var (
	cfgOnce sync.Once
	cfg     *Config
	cfgErr  error
)

func loadConfig() (*Config, error) {
	cfgOnce.Do(func() {
		path := os.Getenv(ConfigEnv)
		if path == "" {
			cfgErr = fmt.Errorf("%s is not set", ConfigEnv)
			return
		}
		data, err := os.ReadFile(path)
		if err != nil {
			cfgErr = err
			return
		}
		var c Config
		if err := json.Unmarshal(data, &c); err != nil {
			cfgErr = fmt.Errorf("%s: %w", path, err)
			return
		}
		cfg, cfgErr = &c, validate(&c)
	})
	return cfg, cfgErr
}

func validate(c *Config) error {
	seen, minors, migs := map[string]bool{}, map[int]bool{}, map[string]bool{}
	for i, d := range c.Devices {
		if !strings.HasPrefix(d.UUID, "GPU-") || seen[d.UUID] {
			return fmt.Errorf("device %d: uuid %q is not a unique GPU-... uuid", i, d.UUID)
		}
		seen[d.UUID] = true
		// 255 is nvidiactl's minor; NVML's name buffer is NVML_DEVICE_NAME_V2_BUFFER_SIZE (96).
		if d.Minor < 0 || d.Minor >= 255 || minors[d.Minor] {
			return fmt.Errorf("device %d: minor %d is not a unique number below 255", i, d.Minor)
		}
		minors[d.Minor] = true
		if d.Name == "" || len(d.Name) >= 96 || d.MemoryBytes == 0 {
			return fmt.Errorf("device %d: a name of 1-95 bytes and memory are needed (%q, %d bytes)", i, d.Name, d.MemoryBytes)
		}
		if _, ok := architectures[d.Architecture]; !ok {
			return fmt.Errorf("device %d: unknown architecture %q", i, d.Architecture)
		}
		if _, ok := brands[d.Brand]; !ok {
			return fmt.Errorf("device %d: unknown brand %q", i, d.Brand)
		}
		if _, ok := addressingModes[d.AddressingMode]; !ok {
			return fmt.Errorf("device %d: unknown addressing mode %q", i, d.AddressingMode)
		}
		if err := validateMig(&d, migs); err != nil {
			return fmt.Errorf("device %d: %w", i, err)
		}
		if len(d.MigProfiles) > 0 && (c.CapsMajor <= 0 || c.CapsMajor >= 4096) {
			return fmt.Errorf("device %d: MIG-capable, but no nvidia-caps major (capsMajor %d)", i, c.CapsMajor)
		}
	}
	return nil
}

var (
	callsMu sync.Mutex
	called  = map[string]bool{}
)

// trace records the first call of each NVML function in the file CallsEnv names.
func trace(name string) {
	callsMu.Lock()
	defer callsMu.Unlock()
	if called[name] {
		return
	}
	called[name] = true
	appendCall(name)
}

// traceEach records every call: the functions that change the GPUs (migcreate.go).
func traceEach(name string) {
	callsMu.Lock()
	defer callsMu.Unlock()
	called[name] = true
	appendCall(name)
}

func appendCall(name string) {
	path := os.Getenv(CallsEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, name)
}

func main() {}

// checkConfig is what the harness runs when it writes a config (harness/clusters/realnodes/
// nvidiaroot.py, through ctypes in a child process): "" when this library can serve the file,
// else why not, in one line. The same rules as at nvmlInit, so a profile the stand-in cannot
// express is refused before any plugin starts.
func checkConfig(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Sprintf("%s: %v", path, err)
	}
	if err := validate(&c); err != nil {
		return err.Error()
	}
	return ""
}
