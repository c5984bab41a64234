package main

/*
#cgo CFLAGS: -DNVML_NO_UNVERSIONED_FUNC_DEFS -Wno-deprecated-declarations
#include <stdlib.h>
#include "nvml.h"
*/
import "C"

import "unsafe"

// MIG as the plugin (sigs.k8s.io/dra-driver-nvidia-gpu@v0.4.1 cmd/gpu-kubelet-plugin/
// nvlib.go getGpuInfo, getMigDevices, walkMigDevices) and go-nvlib v0.11.0 (pkg/nvlib/device/
// device.go IsMigCapable, IsMigEnabled; mig_profile.go NewMigProfile) read it: MIG mode, the
// GPU-instance profiles and their placements, the MIG device handles by index, each one's GPU
// and compute instance (ids, info, profile info) and UUID. A GPU whose config lists no MIG
// profile is not MIG-capable: every MIG query about it answers NOT_SUPPORTED, as NVML does.
// What they read is the live state (migstate.go): the config's static layout at first, then
// what DynamicMIG creates and destroys (migcreate.go).

// migDevice: the MIG device (compute instance) behind a MIG device handle.
func migDevice(h C.nvmlDevice_t) (*computeInstance, C.nvmlReturn_t) {
	mu.Lock()
	defer mu.Unlock()
	if inits == 0 {
		return nil, uninitialized
	}
	ci, ok := migByAddr[uintptr(unsafe.Pointer(h.handle))]
	if !ok {
		return nil, invalidArg
	}
	return ci, success
}

func (ci *computeInstance) parent() *GPU { return &cfg.Devices[ci.gi.gpu] }

// migCapable: a full GPU's handle, NOT_SUPPORTED when its part has no MIG.
func migCapable(name string, h C.nvmlDevice_t) (*GPU, C.nvmlReturn_t) {
	trace(name)
	d, ret := device(h)
	if ret != success {
		return nil, ret
	}
	if len(d.MigProfiles) == 0 {
		return nil, notSupported
	}
	return d, success
}

//export nvmlDeviceGetMigMode
func nvmlDeviceGetMigMode(h C.nvmlDevice_t, current, pending *C.uint) C.nvmlReturn_t {
	if _, ret := migCapable("nvmlDeviceGetMigMode", h); ret != success {
		return ret
	}
	if current == nil || pending == nil {
		return invalidArg
	}
	mu.Lock()
	defer mu.Unlock()
	g := indexOf(h)
	*current, *pending = migModeValue(migCurrent[g]), migModeValue(migPending[g])
	return success
}

func migModeValue(on bool) C.uint {
	if on {
		return C.NVML_DEVICE_MIG_ENABLE
	}
	return C.NVML_DEVICE_MIG_DISABLE
}

//export nvmlDeviceGetGpuInstanceProfileInfo
func nvmlDeviceGetGpuInstanceProfileInfo(h C.nvmlDevice_t, profile C.uint, info *C.nvmlGpuInstanceProfileInfo_t) C.nvmlReturn_t {
	d, ret := migCapable("nvmlDeviceGetGpuInstanceProfileInfo", h)
	if ret != success {
		return ret
	}
	if info == nil || profile >= C.NVML_GPU_INSTANCE_PROFILE_COUNT {
		return invalidArg
	}
	p := d.migProfileByIndex(int(profile))
	if p == nil {
		return notSupported // a profile this part does not offer
	}
	*info = C.nvmlGpuInstanceProfileInfo_t{
		id: C.uint(p.ID), isP2pSupported: 0, sliceCount: C.uint(p.Slices),
		instanceCount: C.uint(len(p.PlacementStarts)), multiprocessorCount: C.uint(p.Multiprocessors),
		copyEngineCount: C.uint(p.CopyEngines), decoderCount: C.uint(p.Decoders),
		encoderCount: C.uint(p.Encoders), jpegCount: C.uint(p.JpegEngines), ofaCount: C.uint(p.OfaEngines),
		memorySizeMB: C.ulonglong(p.MemoryMiB),
	}
	return success
}

// Placements by profile id; a nil array asks for the count (go-nvml device.go
// GetGpuInstancePossiblePlacements calls it twice).
//
//export nvmlDeviceGetGpuInstancePossiblePlacements_v2
func nvmlDeviceGetGpuInstancePossiblePlacements_v2(h C.nvmlDevice_t, profileID C.uint, out *C.nvmlGpuInstancePlacement_t, n *C.uint) C.nvmlReturn_t {
	d, ret := migCapable("nvmlDeviceGetGpuInstancePossiblePlacements_v2", h)
	if ret != success {
		return ret
	}
	p := d.migProfile(int(profileID))
	if n == nil || p == nil {
		return invalidArg
	}
	if out == nil {
		*n = C.uint(len(p.PlacementStarts))
		return success
	}
	if int(*n) < len(p.PlacementStarts) {
		*n = C.uint(len(p.PlacementStarts))
		return insufficient
	}
	placements := unsafe.Slice(out, len(p.PlacementStarts))
	for i, start := range p.PlacementStarts {
		placements[i] = C.nvmlGpuInstancePlacement_t{start: C.uint(start), size: C.uint(p.PlacementSize)}
	}
	*n = C.uint(len(p.PlacementStarts))
	return success
}

//export nvmlDeviceGetMaxMigDeviceCount
func nvmlDeviceGetMaxMigDeviceCount(h C.nvmlDevice_t, count *C.uint) C.nvmlReturn_t {
	d, ret := migCapable("nvmlDeviceGetMaxMigDeviceCount", h)
	if ret != success {
		return ret
	}
	if count == nil {
		return invalidArg
	}
	*count = C.uint(d.maxMigDevices())
	return success
}

//export nvmlDeviceGetMigDeviceHandleByIndex
func nvmlDeviceGetMigDeviceHandleByIndex(h C.nvmlDevice_t, i C.uint, mig *C.nvmlDevice_t) C.nvmlReturn_t {
	d, ret := migCapable("nvmlDeviceGetMigDeviceHandleByIndex", h)
	if ret != success {
		return ret
	}
	if mig == nil || int(i) >= d.maxMigDevices() {
		return invalidArg
	}
	mu.Lock()
	defer mu.Unlock()
	devices := migDevicesOf(indexOf(h))
	if int(i) >= len(devices) {
		return notFound
	}
	*mig = devices[i].dev
	return success
}

func indexOf(h C.nvmlDevice_t) int { return byAddr[uintptr(unsafe.Pointer(h.handle))] }

//export nvmlDeviceGetDeviceHandleFromMigDeviceHandle
func nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig C.nvmlDevice_t, out *C.nvmlDevice_t) C.nvmlReturn_t {
	trace("nvmlDeviceGetDeviceHandleFromMigDeviceHandle")
	ci, ret := migDevice(mig)
	if ret != success {
		return ret // a full GPU's handle is no MIG device's
	}
	if out == nil {
		return invalidArg
	}
	*out = handles[ci.gi.gpu]
	return success
}

func migID(name string, h C.nvmlDevice_t, out *C.uint, id func(*computeInstance) int) C.nvmlReturn_t {
	trace(name)
	ci, ret := migDevice(h)
	if ret != success {
		if _, full := device(h); full == success {
			return notSupported // NVML: not a MIG device handle
		}
		return ret
	}
	if out == nil {
		return invalidArg
	}
	*out = C.uint(id(ci))
	return success
}

//export nvmlDeviceGetGpuInstanceId
func nvmlDeviceGetGpuInstanceId(h C.nvmlDevice_t, id *C.uint) C.nvmlReturn_t {
	return migID("nvmlDeviceGetGpuInstanceId", h, id, func(ci *computeInstance) int { return ci.gi.id })
}

//export nvmlDeviceGetComputeInstanceId
func nvmlDeviceGetComputeInstanceId(h C.nvmlDevice_t, id *C.uint) C.nvmlReturn_t {
	return migID("nvmlDeviceGetComputeInstanceId", h, id, func(ci *computeInstance) int { return ci.id })
}

//export nvmlDeviceGetGpuInstanceById
func nvmlDeviceGetGpuInstanceById(h C.nvmlDevice_t, id C.uint, gi *C.nvmlGpuInstance_t) C.nvmlReturn_t {
	if _, ret := migCapable("nvmlDeviceGetGpuInstanceById", h); ret != success {
		return ret
	}
	if gi == nil {
		return invalidArg
	}
	mu.Lock()
	defer mu.Unlock()
	g := indexOf(h)
	if !migCurrent[g] {
		return notSupported // NVML: MIG mode is off
	}
	for _, instance := range gis[g] {
		if instance.id == int(id) {
			*gi = instance.handle
			return success
		}
	}
	return notFound
}

// gpuInstanceOf: the GPU instance behind a handle, under mu (the caller unlocks).
func gpuInstanceOf(h C.nvmlGpuInstance_t) (*gpuInstance, C.nvmlReturn_t) {
	mu.Lock()
	if inits == 0 {
		return nil, uninitialized
	}
	gi, ok := giByAddr[uintptr(unsafe.Pointer(h.handle))]
	if !ok {
		return nil, invalidArg
	}
	return gi, success
}

//export nvmlGpuInstanceGetInfo
func nvmlGpuInstanceGetInfo(h C.nvmlGpuInstance_t, info *C.nvmlGpuInstanceInfo_t) C.nvmlReturn_t {
	trace("nvmlGpuInstanceGetInfo")
	gi, ret := gpuInstanceOf(h)
	defer mu.Unlock()
	if ret != success {
		return ret
	}
	if info == nil {
		return invalidArg
	}
	*info = C.nvmlGpuInstanceInfo_t{
		device: handles[gi.gpu], id: C.uint(gi.id), profileId: C.uint(gi.profile.ID),
		placement: C.nvmlGpuInstancePlacement_t{start: C.uint(gi.start), size: C.uint(gi.profile.PlacementSize)},
	}
	return success
}

//export nvmlGpuInstanceGetComputeInstanceById
func nvmlGpuInstanceGetComputeInstanceById(h C.nvmlGpuInstance_t, id C.uint, ci *C.nvmlComputeInstance_t) C.nvmlReturn_t {
	trace("nvmlGpuInstanceGetComputeInstanceById")
	gi, ret := gpuInstanceOf(h)
	defer mu.Unlock()
	if ret != success {
		return ret
	}
	if ci == nil {
		return invalidArg
	}
	for _, instance := range gi.cis {
		if instance.id == int(id) {
			*ci = instance.handle
			return success
		}
	}
	return notFound
}

// Only the compute-instance profile spanning the whole GPU instance (shared engines) exists:
// the one static layouts create; smaller ones ("1c.3g...") are NOT_SUPPORTED here.
//
//export nvmlGpuInstanceGetComputeInstanceProfileInfo
func nvmlGpuInstanceGetComputeInstanceProfileInfo(gi C.nvmlGpuInstance_t, profile, eng C.uint, info *C.nvmlComputeInstanceProfileInfo_t) C.nvmlReturn_t {
	trace("nvmlGpuInstanceGetComputeInstanceProfileInfo")
	instance, ret := gpuInstanceOf(gi)
	defer mu.Unlock()
	if ret != success {
		return ret
	}
	if info == nil || profile >= C.NVML_COMPUTE_INSTANCE_PROFILE_COUNT || eng >= C.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT {
		return invalidArg
	}
	p := instance.profile
	if int(profile) != ciProfileBySlices[p.Slices] {
		return notSupported
	}
	*info = C.nvmlComputeInstanceProfileInfo_t{
		id: C.uint(profile), sliceCount: C.uint(p.Slices), instanceCount: 1,
		multiprocessorCount: C.uint(p.Multiprocessors), sharedCopyEngineCount: C.uint(p.CopyEngines),
		sharedDecoderCount: C.uint(p.Decoders), sharedEncoderCount: C.uint(p.Encoders),
		sharedJpegCount: C.uint(p.JpegEngines), sharedOfaCount: C.uint(p.OfaEngines),
	}
	return success
}

// info.device is the MIG device's handle: the plugin (nvlib.go createMigDevice) takes the
// new MIG device's UUID from it.
//
//export nvmlComputeInstanceGetInfo_v2
func nvmlComputeInstanceGetInfo_v2(h C.nvmlComputeInstance_t, info *C.nvmlComputeInstanceInfo_t) C.nvmlReturn_t {
	trace("nvmlComputeInstanceGetInfo_v2")
	mu.Lock()
	defer mu.Unlock()
	if inits == 0 {
		return uninitialized
	}
	ci, ok := ciByAddr[uintptr(unsafe.Pointer(h.handle))]
	if !ok || info == nil {
		return invalidArg
	}
	p := ci.gi.profile
	*info = C.nvmlComputeInstanceInfo_t{
		device: ci.dev, gpuInstance: ci.gi.handle,
		id: C.uint(ci.id), profileId: C.uint(ciProfileBySlices[p.Slices]),
		placement: C.nvmlComputeInstancePlacement_t{start: 0, size: C.uint(p.Slices)},
	}
	return success
}
