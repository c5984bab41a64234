package main

/*
#cgo CFLAGS: -DNVML_NO_UNVERSIONED_FUNC_DEFS -Wno-deprecated-declarations
#include <stdlib.h>
#include "nvml.h"
*/
import "C"

// The rest of what the plugin (cmd/gpu-kubelet-plugin @ v0.4.1), go-nvlib v0.11.0
// (pkg/nvlib/device) and the toolkit's nvcdi (v1.19.1) may call: device attributes and
// capabilities, persistence mode; each answers NOT_SUPPORTED for a valid handle where
// a GPU without the feature would. Changing MIG (DynamicMIG) is migcreate.go's, events
// (the NVMLDeviceHealthCheck gate) events.go's.

//export nvmlDeviceGetAttributes_v2
func nvmlDeviceGetAttributes_v2(h C.nvmlDevice_t, a *C.nvmlDeviceAttributes_t) C.nvmlReturn_t {
	return notSupportedFor("nvmlDeviceGetAttributes_v2", h)
}

//export nvmlDeviceGetCapabilities
func nvmlDeviceGetCapabilities(h C.nvmlDevice_t, caps *C.nvmlDeviceCapabilities_t) C.nvmlReturn_t {
	return notSupportedFor("nvmlDeviceGetCapabilities", h)
}

//export nvmlDeviceSetPersistenceMode
func nvmlDeviceSetPersistenceMode(h C.nvmlDevice_t, mode C.nvmlEnableState_t) C.nvmlReturn_t {
	return notSupportedFor("nvmlDeviceSetPersistenceMode", h) // needs root on a real host
}

//export nvmlDeviceGetVirtualizationMode
func nvmlDeviceGetVirtualizationMode(h C.nvmlDevice_t, mode *C.nvmlGpuVirtualizationMode_t) C.nvmlReturn_t {
	trace("nvmlDeviceGetVirtualizationMode")
	if _, ret := device(h); ret != success {
		return ret
	}
	if mode == nil {
		return invalidArg
	}
	*mode = C.NVML_GPU_VIRTUALIZATION_MODE_NONE // bare metal
	return success
}
