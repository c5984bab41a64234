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
	"unsafe"
)

// DynamicMIG: what the plugin (sigs.k8s.io/dra-driver-nvidia-gpu@v0.4.1 cmd/gpu-kubelet-plugin)
// changes through NVML when its DynamicMIG gate is on, with NVML's documented answers (nvml.h
// of go-nvml v0.13.1-0):
//
//	nvlib.go createMigDevice      nvmlDeviceSetMigMode (only where MIG mode is off),
//	                              nvmlDeviceCreateGpuInstanceWithPlacement (shim.c: const arg),
//	                              nvmlGpuInstanceCreateComputeInstance
//	nvlib.go deleteMigDevice      nvmlComputeInstanceDestroy, nvmlGpuInstanceDestroy
//	nvlib.go maybeDisableMigMode  nvmlDeviceSetMigMode (Hopper and later only)
//
// The rest of those functions (GetGpuInstanceById, GetInfo, GetComputeInstanceProfileInfo,
// GetComputeInstanceById, the new MIG device's UUID) are mig.go's queries over the same state.
// Like the kernel driver, creating an instance writes its capability file (R/proc/driver/
// nvidia/capabilities/gpu<minor>/mig/gi<G>[/ci<C>]/access) and device node (R/dev/nvidia-
// caps/nvidia-cap<N>) under the driver root; destroying it removes them. Each call of these
// is logged every time (traceEach), the others on their first call.

//export nvmlDeviceSetMigMode
func nvmlDeviceSetMigMode(h C.nvmlDevice_t, mode C.uint, status *C.nvmlReturn_t) C.nvmlReturn_t {
	traceEach("nvmlDeviceSetMigMode")
	d, ret := migCapable("nvmlDeviceSetMigMode", h)
	if ret != success {
		return ret
	}
	if status == nil || (mode != C.NVML_DEVICE_MIG_ENABLE && mode != C.NVML_DEVICE_MIG_DISABLE) {
		return invalidArg
	}
	on := mode == C.NVML_DEVICE_MIG_ENABLE
	mu.Lock()
	defer mu.Unlock()
	g := indexOf(h)
	switch {
	case !on && len(gis[g]) > 0:
		*status = C.NVML_ERROR_IN_USE // GPU instances left: the mode stays
	case architectures[d.Architecture] < C.NVML_DEVICE_ARCH_HOPPER:
		// Before Hopper (nvlib.go supportsMIGModeToggle): the mode is pending until a GPU
		// reset, which the stand-in never does.
		migPending[g] = on
		*status = success
		if migCurrent[g] != on {
			*status = C.NVML_ERROR_RESET_REQUIRED
		}
	default: // Hopper and later toggle without a reset
		migCurrent[g], migPending[g] = on, on
		*status = success
	}
	return success
}

// dhCreateGpuInstanceWithPlacement serves shim.c's nvmlDeviceCreateGpuInstanceWithPlacement.
//
//export dhCreateGpuInstanceWithPlacement
func dhCreateGpuInstanceWithPlacement(h C.nvmlDevice_t, profileID C.uint, placement *C.nvmlGpuInstancePlacement_t, out *C.nvmlGpuInstance_t) C.nvmlReturn_t {
	traceEach("nvmlDeviceCreateGpuInstanceWithPlacement")
	d, ret := migCapable("nvmlDeviceCreateGpuInstanceWithPlacement", h)
	if ret != success {
		return ret
	}
	p := d.migProfile(int(profileID))
	if placement == nil || out == nil || p == nil {
		return invalidArg
	}
	start, size := int(placement.start), int(placement.size)
	if size != p.PlacementSize || !containsInt(p.PlacementStarts, start) {
		return invalidArg // not one of nvmlDeviceGetGpuInstancePossiblePlacements_v2's
	}
	mu.Lock()
	defer mu.Unlock()
	g := indexOf(h)
	if !migCurrent[g] {
		return notSupported
	}
	// Memory slices already held: NVML answers INSUFFICIENT_RESOURCES for an occupied
	// placement (the plugin's note in nvlib.go createMigDevice).
	for _, other := range gis[g] {
		if start < other.start+other.profile.PlacementSize && other.start < start+size {
			return C.NVML_ERROR_INSUFFICIENT_RESOURCES
		}
	}
	id := freeID(1, func(id int) bool {
		for _, other := range gis[g] {
			if other.id == id {
				return true
			}
		}
		return false
	})
	gi := addGpuInstance(g, p, start, id)
	giMinor, _ := capsMinors(d.Minor, id, 0)
	if err := makeCapability(gi.accessDir(), giMinor); err != nil {
		fmt.Fprintf(os.Stderr, "libnvidia-ml.so.1 (dra-harness stand-in): GPU instance %d: %v\n", id, err)
		removeCapability(gi.accessDir(), giMinor)
		removeGpuInstance(gi)
		return unknownFailure
	}
	*out = gi.handle
	return success
}

//export nvmlGpuInstanceCreateComputeInstance
func nvmlGpuInstanceCreateComputeInstance(h C.nvmlGpuInstance_t, profile C.uint, out *C.nvmlComputeInstance_t) C.nvmlReturn_t {
	traceEach("nvmlGpuInstanceCreateComputeInstance")
	gi, ret := gpuInstanceOf(h)
	defer mu.Unlock()
	if ret != success {
		return ret
	}
	if out == nil || profile >= C.NVML_COMPUTE_INSTANCE_PROFILE_COUNT {
		return invalidArg
	}
	if int(profile) != ciProfileBySlices[gi.profile.Slices] {
		return notSupported // only the compute instance spanning the GPU instance (mig.go)
	}
	if len(gi.cis) > 0 {
		return C.NVML_ERROR_INSUFFICIENT_RESOURCES // that one spans every compute slice
	}
	parent := &cfg.Devices[gi.gpu]
	ci := addComputeInstance(gi, 0, newMigUUID(parent.UUID, gi.id, 0))
	_, ciMinor := capsMinors(parent.Minor, gi.id, ci.id)
	if err := makeCapability(ci.accessDir(), ciMinor); err != nil {
		fmt.Fprintf(os.Stderr, "libnvidia-ml.so.1 (dra-harness stand-in): compute instance %d/%d: %v\n", gi.id, ci.id, err)
		removeCapability(ci.accessDir(), ciMinor)
		removeComputeInstance(ci)
		return unknownFailure
	}
	*out = ci.handle
	return success
}

//export nvmlComputeInstanceDestroy
func nvmlComputeInstanceDestroy(h C.nvmlComputeInstance_t) C.nvmlReturn_t {
	traceEach("nvmlComputeInstanceDestroy")
	mu.Lock()
	defer mu.Unlock()
	if inits == 0 {
		return uninitialized
	}
	ci, ok := ciByAddr[uintptr(unsafe.Pointer(h.handle))]
	if !ok {
		return invalidArg
	}
	_, ciMinor := capsMinors(ci.parent().Minor, ci.gi.id, ci.id)
	if err := removeCapability(ci.accessDir(), ciMinor); err != nil {
		fmt.Fprintf(os.Stderr, "libnvidia-ml.so.1 (dra-harness stand-in): compute instance %d/%d: %v\n", ci.gi.id, ci.id, err)
		return unknownFailure
	}
	removeComputeInstance(ci)
	return success
}

//export nvmlGpuInstanceDestroy
func nvmlGpuInstanceDestroy(h C.nvmlGpuInstance_t) C.nvmlReturn_t {
	traceEach("nvmlGpuInstanceDestroy")
	gi, ret := gpuInstanceOf(h)
	defer mu.Unlock()
	if ret != success {
		return ret
	}
	if len(gi.cis) > 0 {
		return C.NVML_ERROR_IN_USE // compute instances are active on it
	}
	giMinor, _ := capsMinors(cfg.Devices[gi.gpu].Minor, gi.id, 0)
	if err := removeCapability(gi.accessDir(), giMinor); err != nil {
		fmt.Fprintf(os.Stderr, "libnvidia-ml.so.1 (dra-harness stand-in): GPU instance %d: %v\n", gi.id, err)
		return unknownFailure
	}
	removeGpuInstance(gi)
	return success
}
