package main

/*
#cgo CFLAGS: -DNVML_NO_UNVERSIONED_FUNC_DEFS -Wno-deprecated-declarations
#include <stdlib.h>
#include "nvml.h"
*/
import "C"

import (
	"time"
	"unsafe"
)

// The rest of what the plugin (cmd/gpu-kubelet-plugin @ v0.4.1), go-nvlib v0.11.0
// (pkg/nvlib/device) and the toolkit's nvcdi (v1.19.1) may call: device attributes and
// capabilities, persistence mode, events; each answers NOT_SUPPORTED for a valid handle where
// a GPU without the feature would. Changing MIG (DynamicMIG) is migcreate.go's.

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

// Events (the plugin's NVMLDeviceHealthCheck gate, cmd/gpu-kubelet-plugin/device_health.go):
// a set that never receives one; Wait times out after the caller's timeout, as NVML does.

//export nvmlEventSetCreate
func nvmlEventSetCreate(set *C.nvmlEventSet_t) C.nvmlReturn_t {
	trace("nvmlEventSetCreate")
	if _, ret := config(); ret != success {
		return ret
	}
	if set == nil {
		return invalidArg
	}
	set.handle = (*C.struct_nvmlEventSet_st)(C.malloc(1))
	return success
}

//export nvmlEventSetFree
func nvmlEventSetFree(set C.nvmlEventSet_t) C.nvmlReturn_t {
	trace("nvmlEventSetFree")
	C.free(unsafe.Pointer(set.handle))
	return success
}

//export nvmlEventSetWait_v2
func nvmlEventSetWait_v2(set C.nvmlEventSet_t, data *C.nvmlEventData_t, timeoutms C.uint) C.nvmlReturn_t {
	trace("nvmlEventSetWait_v2")
	time.Sleep(time.Duration(timeoutms) * time.Millisecond)
	return C.NVML_ERROR_TIMEOUT
}

//export nvmlDeviceGetSupportedEventTypes
func nvmlDeviceGetSupportedEventTypes(h C.nvmlDevice_t, types *C.ulonglong) C.nvmlReturn_t {
	trace("nvmlDeviceGetSupportedEventTypes")
	if _, ret := device(h); ret != success {
		return ret
	}
	if types == nil {
		return invalidArg
	}
	*types = 0 // none: no event will be registered
	return success
}

//export nvmlDeviceRegisterEvents
func nvmlDeviceRegisterEvents(h C.nvmlDevice_t, types C.ulonglong, set C.nvmlEventSet_t) C.nvmlReturn_t {
	trace("nvmlDeviceRegisterEvents")
	if _, ret := device(h); ret != success {
		return ret
	}
	if types != 0 {
		return notSupported
	}
	return success
}
