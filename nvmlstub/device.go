package main

/*
#cgo CFLAGS: -DNVML_NO_UNVERSIONED_FUNC_DEFS -Wno-deprecated-declarations
#include "nvml.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

//export nvmlDeviceGetName
func nvmlDeviceGetName(h C.nvmlDevice_t, name *C.char, length C.uint) C.nvmlReturn_t {
	trace("nvmlDeviceGetName")
	if ref, ret := migDevice(h); ret == success { // as NVML names a MIG device
		return putString(name, length, ref.parent().Name+" MIG "+ref.gi.profile.Name)
	}
	d, ret := device(h)
	if ret != success {
		return ret
	}
	return putString(name, length, d.Name)
}

//export nvmlDeviceGetUUID
func nvmlDeviceGetUUID(h C.nvmlDevice_t, uuid *C.char, length C.uint) C.nvmlReturn_t {
	trace("nvmlDeviceGetUUID")
	if ref, ret := migDevice(h); ret == success {
		return putString(uuid, length, ref.uuid)
	}
	d, ret := device(h)
	if ret != success {
		return ret
	}
	return putString(uuid, length, d.UUID)
}

//export nvmlDeviceGetSerial
func nvmlDeviceGetSerial(h C.nvmlDevice_t, serial *C.char, length C.uint) C.nvmlReturn_t {
	trace("nvmlDeviceGetSerial")
	d, ret := device(h)
	if ret != success {
		return ret
	}
	return putString(serial, length, d.Serial)
}

func uintOut(name string, h C.nvmlDevice_t, out *C.uint, value func(*GPU) uint) C.nvmlReturn_t {
	trace(name)
	d, ret := device(h)
	if ret != success {
		return ret
	}
	if out == nil {
		return invalidArg
	}
	*out = C.uint(value(d))
	return success
}

//export nvmlDeviceGetMinorNumber
func nvmlDeviceGetMinorNumber(h C.nvmlDevice_t, out *C.uint) C.nvmlReturn_t {
	return uintOut("nvmlDeviceGetMinorNumber", h, out, func(d *GPU) uint { return uint(d.Minor) })
}

//export nvmlDeviceGetIndex
func nvmlDeviceGetIndex(h C.nvmlDevice_t, out *C.uint) C.nvmlReturn_t {
	trace("nvmlDeviceGetIndex")
	if _, ret := device(h); ret != success {
		return ret
	}
	if out == nil {
		return invalidArg
	}
	mu.Lock()
	defer mu.Unlock()
	*out = C.uint(byAddr[uintptr(unsafe.Pointer(h.handle))])
	return success
}

//export nvmlDeviceIsMigDeviceHandle
func nvmlDeviceIsMigDeviceHandle(h C.nvmlDevice_t, out *C.uint) C.nvmlReturn_t {
	if _, ret := migDevice(h); ret == success && out != nil {
		trace("nvmlDeviceIsMigDeviceHandle")
		*out = 1
		return success
	}
	return uintOut("nvmlDeviceIsMigDeviceHandle", h, out, func(*GPU) uint { return 0 })
}

//export nvmlDeviceGetMemoryInfo
func nvmlDeviceGetMemoryInfo(h C.nvmlDevice_t, mem *C.nvmlMemory_t) C.nvmlReturn_t {
	trace("nvmlDeviceGetMemoryInfo")
	total := uint64(0)
	if ref, ret := migDevice(h); ret == success {
		total = ref.gi.profile.MemoryMiB << 20
	} else if d, ret := device(h); ret == success {
		total = d.MemoryBytes
	} else {
		return ret
	}
	if mem == nil {
		return invalidArg
	}
	mem.total = C.ulonglong(total)
	mem.free = C.ulonglong(total)
	mem.used = 0
	return success
}

//export nvmlDeviceGetArchitecture
func nvmlDeviceGetArchitecture(h C.nvmlDevice_t, arch *C.nvmlDeviceArchitecture_t) C.nvmlReturn_t {
	trace("nvmlDeviceGetArchitecture")
	d, ret := device(h)
	if ret != success {
		return ret
	}
	if arch == nil {
		return invalidArg
	}
	*arch = architectures[d.Architecture]
	return success
}

//export nvmlDeviceGetBrand
func nvmlDeviceGetBrand(h C.nvmlDevice_t, brand *C.nvmlBrandType_t) C.nvmlReturn_t {
	trace("nvmlDeviceGetBrand")
	d, ret := device(h)
	if ret != success {
		return ret
	}
	if brand == nil {
		return invalidArg
	}
	*brand = brands[d.Brand]
	return success
}

//export nvmlDeviceGetCudaComputeCapability
func nvmlDeviceGetCudaComputeCapability(h C.nvmlDevice_t, major, minor *C.int) C.nvmlReturn_t {
	trace("nvmlDeviceGetCudaComputeCapability")
	d, ret := device(h)
	if ret != success {
		return ret
	}
	if major == nil || minor == nil {
		return invalidArg
	}
	*major, *minor = C.int(d.CCMajor), C.int(d.CCMinor)
	return success
}

//export nvmlDeviceGetAddressingMode
func nvmlDeviceGetAddressingMode(h C.nvmlDevice_t, mode *C.nvmlDeviceAddressingMode_t) C.nvmlReturn_t {
	trace("nvmlDeviceGetAddressingMode")
	d, ret := device(h)
	if ret != success {
		return ret
	}
	if mode == nil {
		return invalidArg
	}
	value := addressingModes[d.AddressingMode]
	if value < 0 {
		return notSupported
	}
	mode.value = C.uint(value)
	return success
}

// pciInfo fills nvmlPciInfo_t as NVML does: busId "0000:1B:00.0" (upper-case hex, which
// go-nvlib GetPCIBusID lower-cases), busIdLegacy with a 4-digit domain.
func pciInfo(name string, h C.nvmlDevice_t, pci *C.nvmlPciInfo_t) C.nvmlReturn_t {
	trace(name)
	d, ret := device(h)
	if ret != success {
		return ret
	}
	if pci == nil {
		return invalidArg
	}
	var domain, bus, dev, fn uint
	if _, err := fmt.Sscanf(d.PCIBusID, "%x:%x:%x.%x", &domain, &bus, &dev, &fn); err != nil {
		return unknownFailure
	}
	id := strings.ToUpper(fmt.Sprintf("%08x:%02x:%02x.%x", domain, bus, dev, fn))
	legacy := strings.ToUpper(fmt.Sprintf("%04x:%02x:%02x.%x", domain, bus, dev, fn))
	pci.domain, pci.bus, pci.device = C.uint(domain), C.uint(bus), C.uint(dev)
	pci.pciDeviceId = C.uint(d.PCIDeviceID)
	putString(&pci.busId[0], C.uint(len(pci.busId)), id)
	putString(&pci.busIdLegacy[0], C.uint(len(pci.busIdLegacy)), legacy)
	return success
}

//export nvmlDeviceGetPciInfo_v3
func nvmlDeviceGetPciInfo_v3(h C.nvmlDevice_t, pci *C.nvmlPciInfo_t) C.nvmlReturn_t {
	return pciInfo("nvmlDeviceGetPciInfo_v3", h, pci)
}

//export nvmlDeviceGetPciInfo_v2
func nvmlDeviceGetPciInfo_v2(h C.nvmlDevice_t, pci *C.nvmlPciInfo_t) C.nvmlReturn_t {
	return pciInfo("nvmlDeviceGetPciInfo_v2", h, pci)
}

//export nvmlDeviceGetPciInfo
func nvmlDeviceGetPciInfo(h C.nvmlDevice_t, pci *C.nvmlPciInfo_t) C.nvmlReturn_t {
	return pciInfo("nvmlDeviceGetPciInfo", h, pci)
}

// notSupportedFor answers NOT_SUPPORTED for a valid handle: what NVML says on a GPU without
// the feature (MIG on a part the profile gives no MIG layout, fabric on a PCIe part).
func notSupportedFor(name string, h C.nvmlDevice_t) C.nvmlReturn_t {
	trace(name)
	if _, ret := device(h); ret != success {
		return ret
	}
	return notSupported
}

//export nvmlDeviceGetGpuFabricInfo
func nvmlDeviceGetGpuFabricInfo(h C.nvmlDevice_t, info *C.nvmlGpuFabricInfo_t) C.nvmlReturn_t {
	return notSupportedFor("nvmlDeviceGetGpuFabricInfo", h)
}

//export nvmlDeviceGetGpuFabricInfoV
func nvmlDeviceGetGpuFabricInfoV(h C.nvmlDevice_t, info *C.nvmlGpuFabricInfoV_t) C.nvmlReturn_t {
	return notSupportedFor("nvmlDeviceGetGpuFabricInfoV", h)
}

//export nvmlDeviceGetPersistenceMode
func nvmlDeviceGetPersistenceMode(h C.nvmlDevice_t, mode *C.nvmlEnableState_t) C.nvmlReturn_t {
	trace("nvmlDeviceGetPersistenceMode")
	if _, ret := device(h); ret != success {
		return ret
	}
	if mode == nil {
		return invalidArg
	}
	*mode = C.NVML_FEATURE_ENABLED
	return success
}

//export nvmlDeviceGetComputeMode
func nvmlDeviceGetComputeMode(h C.nvmlDevice_t, mode *C.nvmlComputeMode_t) C.nvmlReturn_t {
	trace("nvmlDeviceGetComputeMode")
	if _, ret := device(h); ret != success {
		return ret
	}
	if mode == nil {
		return invalidArg
	}
	*mode = C.NVML_COMPUTEMODE_DEFAULT
	return success
}

// nvmlDeviceGetModuleId: v0.5.0 reads it only under its FabricManagerPartitioning gate
// (sigs.k8s.io/dra-driver-nvidia-gpu@v0.5.0 cmd/gpu-kubelet-plugin/nvlib.go), to match a GPU to
// Fabric Manager's partitions; NOT_SUPPORTED, as on a PCIe part (the stand-in serves no fabric).
//
//export nvmlDeviceGetModuleId
func nvmlDeviceGetModuleId(h C.nvmlDevice_t, moduleID *C.uint) C.nvmlReturn_t {
	return notSupportedFor("nvmlDeviceGetModuleId", h)
}
