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
// (pkg/nvlib/device) and the toolkit's nvcdi (v1.19.1) may call: MIG, GPU and compute
// instances, events. These GPUs have MIG off (nvmlDeviceGetMigMode answers NOT_SUPPORTED),
// so no GPU or compute instance exists: every instance handle is invalid, every MIG query
// about a full GPU is NOT_SUPPORTED, as NVML answers on a GPU without MIG.

//export dhNotSupportedFor
func dhNotSupportedFor(name *C.char, h C.nvmlDevice_t) C.nvmlReturn_t {
	return notSupportedFor(C.GoString(name), h)
}

//export nvmlDeviceGetMigDeviceHandleByIndex
func nvmlDeviceGetMigDeviceHandleByIndex(h C.nvmlDevice_t, i C.uint, mig *C.nvmlDevice_t) C.nvmlReturn_t {
	return notSupportedFor("nvmlDeviceGetMigDeviceHandleByIndex", h)
}

//export nvmlDeviceGetDeviceHandleFromMigDeviceHandle
func nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig C.nvmlDevice_t, out *C.nvmlDevice_t) C.nvmlReturn_t {
	trace("nvmlDeviceGetDeviceHandleFromMigDeviceHandle")
	if _, ret := device(mig); ret != success {
		return ret
	}
	return invalidArg // a full GPU's handle is no MIG device's
}

//export nvmlDeviceGetGpuInstanceId
func nvmlDeviceGetGpuInstanceId(h C.nvmlDevice_t, id *C.uint) C.nvmlReturn_t {
	return notSupportedFor("nvmlDeviceGetGpuInstanceId", h)
}

//export nvmlDeviceGetComputeInstanceId
func nvmlDeviceGetComputeInstanceId(h C.nvmlDevice_t, id *C.uint) C.nvmlReturn_t {
	return notSupportedFor("nvmlDeviceGetComputeInstanceId", h)
}

//export nvmlDeviceGetAttributes_v2
func nvmlDeviceGetAttributes_v2(h C.nvmlDevice_t, a *C.nvmlDeviceAttributes_t) C.nvmlReturn_t {
	return notSupportedFor("nvmlDeviceGetAttributes_v2", h)
}

//export nvmlDeviceGetCapabilities
func nvmlDeviceGetCapabilities(h C.nvmlDevice_t, caps *C.nvmlDeviceCapabilities_t) C.nvmlReturn_t {
	return notSupportedFor("nvmlDeviceGetCapabilities", h)
}

//export nvmlDeviceGetGpuInstanceById
func nvmlDeviceGetGpuInstanceById(h C.nvmlDevice_t, id C.uint, gi *C.nvmlGpuInstance_t) C.nvmlReturn_t {
	return notSupportedFor("nvmlDeviceGetGpuInstanceById", h)
}

//export nvmlDeviceGetGpuInstancePossiblePlacements_v2
func nvmlDeviceGetGpuInstancePossiblePlacements_v2(h C.nvmlDevice_t, profile C.uint, p *C.nvmlGpuInstancePlacement_t, n *C.uint) C.nvmlReturn_t {
	return notSupportedFor("nvmlDeviceGetGpuInstancePossiblePlacements_v2", h)
}

//export nvmlDeviceSetMigMode
func nvmlDeviceSetMigMode(h C.nvmlDevice_t, mode C.uint, status *C.nvmlReturn_t) C.nvmlReturn_t {
	return notSupportedFor("nvmlDeviceSetMigMode", h)
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

// No instance exists: every GPU or compute instance handle is invalid.

//export nvmlGpuInstanceGetInfo
func nvmlGpuInstanceGetInfo(gi C.nvmlGpuInstance_t, info *C.nvmlGpuInstanceInfo_t) C.nvmlReturn_t {
	return noInstance("nvmlGpuInstanceGetInfo")
}

//export nvmlGpuInstanceDestroy
func nvmlGpuInstanceDestroy(gi C.nvmlGpuInstance_t) C.nvmlReturn_t {
	return noInstance("nvmlGpuInstanceDestroy")
}

//export nvmlGpuInstanceCreateComputeInstance
func nvmlGpuInstanceCreateComputeInstance(gi C.nvmlGpuInstance_t, profile C.uint, ci *C.nvmlComputeInstance_t) C.nvmlReturn_t {
	return noInstance("nvmlGpuInstanceCreateComputeInstance")
}

//export nvmlGpuInstanceGetComputeInstanceById
func nvmlGpuInstanceGetComputeInstanceById(gi C.nvmlGpuInstance_t, id C.uint, ci *C.nvmlComputeInstance_t) C.nvmlReturn_t {
	return noInstance("nvmlGpuInstanceGetComputeInstanceById")
}

//export nvmlGpuInstanceGetComputeInstanceProfileInfo
func nvmlGpuInstanceGetComputeInstanceProfileInfo(gi C.nvmlGpuInstance_t, profile, eng C.uint, info *C.nvmlComputeInstanceProfileInfo_t) C.nvmlReturn_t {
	return noInstance("nvmlGpuInstanceGetComputeInstanceProfileInfo")
}

//export nvmlComputeInstanceGetInfo_v2
func nvmlComputeInstanceGetInfo_v2(ci C.nvmlComputeInstance_t, info *C.nvmlComputeInstanceInfo_t) C.nvmlReturn_t {
	return noInstance("nvmlComputeInstanceGetInfo_v2")
}

//export nvmlComputeInstanceDestroy
func nvmlComputeInstanceDestroy(ci C.nvmlComputeInstance_t) C.nvmlReturn_t {
	return noInstance("nvmlComputeInstanceDestroy")
}

func noInstance(name string) C.nvmlReturn_t {
	trace(name)
	if _, ret := config(); ret != success {
		return ret
	}
	return invalidArg
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
