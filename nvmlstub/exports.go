package main

/*
#cgo CFLAGS: -DNVML_NO_UNVERSIONED_FUNC_DEFS -Wno-deprecated-declarations
#include <stdlib.h>
#include "nvml.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"
)

// Enum values by the names go-nvlib v0.11.0 pkg/nvlib/device/device.go prints for them
// (GetArchitectureAsString, GetBrandAsString, GetAddressingModeAsString).
var (
	architectures = map[string]C.nvmlDeviceArchitecture_t{
		"Kepler": C.NVML_DEVICE_ARCH_KEPLER, "Maxwell": C.NVML_DEVICE_ARCH_MAXWELL,
		"Pascal": C.NVML_DEVICE_ARCH_PASCAL, "Volta": C.NVML_DEVICE_ARCH_VOLTA,
		"Turing": C.NVML_DEVICE_ARCH_TURING, "Ampere": C.NVML_DEVICE_ARCH_AMPERE,
		"Ada Lovelace": C.NVML_DEVICE_ARCH_ADA, "Hopper": C.NVML_DEVICE_ARCH_HOPPER,
		"Blackwell": C.NVML_DEVICE_ARCH_BLACKWELL,
	}
	brands = map[string]C.nvmlBrandType_t{
		"Nvidia": C.NVML_BRAND_NVIDIA, "Tesla": C.NVML_BRAND_TESLA, "Quadro": C.NVML_BRAND_QUADRO,
		"GeForce": C.NVML_BRAND_GEFORCE, "NvidiaRTX": C.NVML_BRAND_NVIDIA_RTX,
	}
	// -1: NVML answers NOT_SUPPORTED, which go-nvlib prints as "".
	addressingModes = map[string]int{
		"": -1, "None": C.NVML_DEVICE_ADDRESSING_MODE_NONE,
		"HMM": C.NVML_DEVICE_ADDRESSING_MODE_HMM, "ATS": C.NVML_DEVICE_ADDRESSING_MODE_ATS,
	}
)

const (
	success        = C.NVML_SUCCESS
	uninitialized  = C.NVML_ERROR_UNINITIALIZED
	invalidArg     = C.NVML_ERROR_INVALID_ARGUMENT
	notSupported   = C.NVML_ERROR_NOT_SUPPORTED
	notFound       = C.NVML_ERROR_NOT_FOUND
	insufficient   = C.NVML_ERROR_INSUFFICIENT_SIZE
	unknownFailure = C.NVML_ERROR_UNKNOWN
)

// Opaque handles: one malloc'd byte per device, so each is a real address the caller may keep
// (go-nvml's nvml.h wraps the pointer in a one-field struct: the same C ABI).
var (
	mu      sync.Mutex
	inits   int
	handles []C.nvmlDevice_t
	byAddr  = map[uintptr]int{}
)

func device(h C.nvmlDevice_t) (*GPU, C.nvmlReturn_t) {
	mu.Lock()
	defer mu.Unlock()
	if inits == 0 {
		return nil, uninitialized
	}
	i, ok := byAddr[uintptr(unsafe.Pointer(h.handle))]
	if !ok {
		return nil, invalidArg
	}
	return &cfg.Devices[i], success
}

func putString(dst *C.char, length C.uint, s string) C.nvmlReturn_t {
	if dst == nil {
		return invalidArg
	}
	if uint(len(s))+1 > uint(length) {
		return insufficient
	}
	buf := unsafe.Slice((*byte)(unsafe.Pointer(dst)), int(length))
	copy(buf, s)
	buf[len(s)] = 0
	return success
}

func initialize() C.nvmlReturn_t {
	c, err := loadConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "libnvidia-ml.so.1 (dra-harness stand-in): %v\n", err)
		return unknownFailure
	}
	mu.Lock()
	defer mu.Unlock()
	if handles == nil {
		for i := range c.Devices {
			h := C.nvmlDevice_t{handle: (*C.struct_nvmlDevice_st)(C.malloc(1))}
			handles = append(handles, h)
			byAddr[uintptr(unsafe.Pointer(h.handle))] = i
		}
		makeMigHandles(c)
	}
	inits++
	return success
}

//export nvmlInit_v2
func nvmlInit_v2() C.nvmlReturn_t { trace("nvmlInit_v2"); return initialize() }

//export nvmlInit
func nvmlInit() C.nvmlReturn_t { trace("nvmlInit"); return initialize() }

//export nvmlInitWithFlags
func nvmlInitWithFlags(flags C.uint) C.nvmlReturn_t { trace("nvmlInitWithFlags"); return initialize() }

//export nvmlShutdown
func nvmlShutdown() C.nvmlReturn_t {
	trace("nvmlShutdown")
	mu.Lock()
	defer mu.Unlock()
	if inits == 0 {
		return uninitialized
	}
	inits--
	return success
}

//export nvmlSystemGetDriverVersion
func nvmlSystemGetDriverVersion(version *C.char, length C.uint) C.nvmlReturn_t {
	trace("nvmlSystemGetDriverVersion")
	if _, ret := config(); ret != success {
		return ret
	}
	return putString(version, length, cfg.DriverVersion)
}

//export nvmlSystemGetNVMLVersion
func nvmlSystemGetNVMLVersion(version *C.char, length C.uint) C.nvmlReturn_t {
	trace("nvmlSystemGetNVMLVersion")
	if _, ret := config(); ret != success {
		return ret
	}
	return putString(version, length, cfg.NVMLVersion)
}

func cudaVersion(out *C.int) C.nvmlReturn_t {
	c, ret := config()
	if ret != success {
		return ret
	}
	if out == nil {
		return invalidArg
	}
	*out = C.int(c.CudaDriverVersion)
	return success
}

//export nvmlSystemGetCudaDriverVersion
func nvmlSystemGetCudaDriverVersion(v *C.int) C.nvmlReturn_t {
	trace("nvmlSystemGetCudaDriverVersion")
	return cudaVersion(v)
}

//export nvmlSystemGetCudaDriverVersion_v2
func nvmlSystemGetCudaDriverVersion_v2(v *C.int) C.nvmlReturn_t {
	trace("nvmlSystemGetCudaDriverVersion_v2")
	return cudaVersion(v)
}

func config() (*Config, C.nvmlReturn_t) {
	mu.Lock()
	defer mu.Unlock()
	if inits == 0 {
		return nil, uninitialized
	}
	return cfg, success
}

func count(out *C.uint) C.nvmlReturn_t {
	c, ret := config()
	if ret != success {
		return ret
	}
	if out == nil {
		return invalidArg
	}
	*out = C.uint(len(c.Devices))
	return success
}

//export nvmlDeviceGetCount_v2
func nvmlDeviceGetCount_v2(n *C.uint) C.nvmlReturn_t { trace("nvmlDeviceGetCount_v2"); return count(n) }

//export nvmlDeviceGetCount
func nvmlDeviceGetCount(n *C.uint) C.nvmlReturn_t { trace("nvmlDeviceGetCount"); return count(n) }

func byIndex(index C.uint, out *C.nvmlDevice_t) C.nvmlReturn_t {
	if _, ret := config(); ret != success {
		return ret
	}
	if out == nil || int(index) >= len(handles) {
		return invalidArg
	}
	*out = handles[index]
	return success
}

//export nvmlDeviceGetHandleByIndex_v2
func nvmlDeviceGetHandleByIndex_v2(i C.uint, out *C.nvmlDevice_t) C.nvmlReturn_t {
	trace("nvmlDeviceGetHandleByIndex_v2")
	return byIndex(i, out)
}

//export nvmlDeviceGetHandleByIndex
func nvmlDeviceGetHandleByIndex(i C.uint, out *C.nvmlDevice_t) C.nvmlReturn_t {
	trace("nvmlDeviceGetHandleByIndex")
	return byIndex(i, out)
}

// find is called by shim.c's functions that take a const char* (a Go export cannot declare const).
//
//export dhFindDevice
func dhFindDevice(name *C.char, key *C.char, out *C.nvmlDevice_t) C.nvmlReturn_t {
	what := C.GoString(name)
	trace(what)
	c, ret := config()
	if ret != success {
		return ret
	}
	if key == nil || out == nil {
		return invalidArg
	}
	want := strings.ToLower(C.GoString(key))
	for i, d := range c.Devices {
		match := strings.ToLower(d.UUID) == want
		if strings.Contains(what, "PciBusId") {
			match = strings.TrimPrefix(strings.ToLower(d.PCIBusID), "0000") == strings.TrimPrefix(want, "0000")
		}
		if match {
			*out = handles[i]
			return success
		}
	}
	return notFound
}

//export dhErrorString
func dhErrorString(r C.nvmlReturn_t) C.int { trace("nvmlErrorString"); return C.int(r) }

// dhCheckConfig: checkConfig for C callers; the answer is malloc'd (the caller frees it).
//
//export dhCheckConfig
func dhCheckConfig(path *C.char) *C.char { return C.CString(checkConfig(C.GoString(path))) }
