package main

/*
#cgo CFLAGS: -DNVML_NO_UNVERSIONED_FUNC_DEFS -Wno-deprecated-declarations
#include <stdlib.h>
#include "nvml.h"
*/
import "C"

import "unsafe"

// Static MIG, as the plugin (sigs.k8s.io/dra-driver-nvidia-gpu@v0.4.1 cmd/gpu-kubelet-plugin/
// nvlib.go getGpuInfo, getMigDevices, walkMigDevices) and go-nvlib v0.11.0 (pkg/nvlib/device/
// device.go IsMigCapable, IsMigEnabled; mig_profile.go NewMigProfile) read it: MIG mode, the
// GPU-instance profiles and their placements, the MIG device handles by index, each one's GPU
// and compute instance (ids, info, profile info) and UUID. A GPU whose config lists no MIG
// profile is not MIG-capable: every MIG query about it answers NOT_SUPPORTED, as NVML does.
// Creating and destroying instances (DynamicMIG) stays unsupported (nomig.go).

type migRef struct{ gpu, mig int }

// One malloc'd byte per MIG device, GPU instance and compute instance: real addresses the
// caller may keep, made once at the first nvmlInit (initialize, under mu).
var (
	migHandles [][]C.nvmlDevice_t
	giHandles  [][]C.nvmlGpuInstance_t
	ciHandles  [][]C.nvmlComputeInstance_t
	migByAddr  = map[uintptr]migRef{}
	giByAddr   = map[uintptr]migRef{}
	ciByAddr   = map[uintptr]migRef{}
)

func makeMigHandles(c *Config) {
	for g, d := range c.Devices {
		migHandles = append(migHandles, nil)
		giHandles = append(giHandles, nil)
		ciHandles = append(ciHandles, nil)
		for m := range d.MigDevices {
			ref := migRef{g, m}
			h := C.nvmlDevice_t{handle: (*C.struct_nvmlDevice_st)(C.malloc(1))}
			gi := C.nvmlGpuInstance_t{handle: (*C.struct_nvmlGpuInstance_st)(C.malloc(1))}
			ci := C.nvmlComputeInstance_t{handle: (*C.struct_nvmlComputeInstance_st)(C.malloc(1))}
			migHandles[g] = append(migHandles[g], h)
			giHandles[g] = append(giHandles[g], gi)
			ciHandles[g] = append(ciHandles[g], ci)
			migByAddr[uintptr(unsafe.Pointer(h.handle))] = ref
			giByAddr[uintptr(unsafe.Pointer(gi.handle))] = ref
			ciByAddr[uintptr(unsafe.Pointer(ci.handle))] = ref
		}
	}
}

func refFor(table map[uintptr]migRef, addr unsafe.Pointer) (migRef, C.nvmlReturn_t) {
	mu.Lock()
	defer mu.Unlock()
	if inits == 0 {
		return migRef{}, uninitialized
	}
	ref, ok := table[uintptr(addr)]
	if !ok {
		return migRef{}, invalidArg
	}
	return ref, success
}

func (r migRef) parent() *GPU    { return &cfg.Devices[r.gpu] }
func (r migRef) dev() *MigDevice { return &cfg.Devices[r.gpu].MigDevices[r.mig] }
func (r migRef) profile() *MigProfile {
	return r.parent().migProfile(r.dev().ProfileID)
}

// migDevice: the MIG device behind a MIG device handle.
func migDevice(h C.nvmlDevice_t) (migRef, C.nvmlReturn_t) {
	return refFor(migByAddr, unsafe.Pointer(h.handle))
}

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
	d, ret := migCapable("nvmlDeviceGetMigMode", h)
	if ret != success {
		return ret
	}
	if current == nil || pending == nil {
		return invalidArg
	}
	mode := C.uint(C.NVML_DEVICE_MIG_DISABLE)
	if d.MigEnabled {
		mode = C.NVML_DEVICE_MIG_ENABLE
	}
	*current, *pending = mode, mode
	return success
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
	if int(i) >= len(d.MigDevices) {
		return notFound
	}
	mu.Lock()
	defer mu.Unlock()
	*mig = migHandles[indexOf(h)][i]
	return success
}

func indexOf(h C.nvmlDevice_t) int { return byAddr[uintptr(unsafe.Pointer(h.handle))] }

//export nvmlDeviceGetDeviceHandleFromMigDeviceHandle
func nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig C.nvmlDevice_t, out *C.nvmlDevice_t) C.nvmlReturn_t {
	trace("nvmlDeviceGetDeviceHandleFromMigDeviceHandle")
	ref, ret := migDevice(mig)
	if ret != success {
		return ret // a full GPU's handle is no MIG device's
	}
	if out == nil {
		return invalidArg
	}
	*out = handles[ref.gpu]
	return success
}

func migID(name string, h C.nvmlDevice_t, out *C.uint, id func(*MigDevice) int) C.nvmlReturn_t {
	trace(name)
	ref, ret := migDevice(h)
	if ret != success {
		if _, full := device(h); full == success {
			return notSupported // NVML: not a MIG device handle
		}
		return ret
	}
	if out == nil {
		return invalidArg
	}
	*out = C.uint(id(ref.dev()))
	return success
}

//export nvmlDeviceGetGpuInstanceId
func nvmlDeviceGetGpuInstanceId(h C.nvmlDevice_t, id *C.uint) C.nvmlReturn_t {
	return migID("nvmlDeviceGetGpuInstanceId", h, id, func(m *MigDevice) int { return m.GI })
}

//export nvmlDeviceGetComputeInstanceId
func nvmlDeviceGetComputeInstanceId(h C.nvmlDevice_t, id *C.uint) C.nvmlReturn_t {
	return migID("nvmlDeviceGetComputeInstanceId", h, id, func(m *MigDevice) int { return m.CI })
}

//export nvmlDeviceGetGpuInstanceById
func nvmlDeviceGetGpuInstanceById(h C.nvmlDevice_t, id C.uint, gi *C.nvmlGpuInstance_t) C.nvmlReturn_t {
	d, ret := migCapable("nvmlDeviceGetGpuInstanceById", h)
	if ret != success {
		return ret
	}
	if !d.MigEnabled {
		return notSupported // NVML: MIG mode is off
	}
	if gi == nil {
		return invalidArg
	}
	for m, dev := range d.MigDevices {
		if dev.GI == int(id) {
			mu.Lock()
			defer mu.Unlock()
			*gi = giHandles[indexOf(h)][m]
			return success
		}
	}
	return notFound
}

//export nvmlGpuInstanceGetInfo
func nvmlGpuInstanceGetInfo(gi C.nvmlGpuInstance_t, info *C.nvmlGpuInstanceInfo_t) C.nvmlReturn_t {
	trace("nvmlGpuInstanceGetInfo")
	ref, ret := refFor(giByAddr, unsafe.Pointer(gi.handle))
	if ret != success {
		return ret
	}
	if info == nil {
		return invalidArg
	}
	m, p := ref.dev(), ref.profile()
	*info = C.nvmlGpuInstanceInfo_t{
		device: handles[ref.gpu], id: C.uint(m.GI), profileId: C.uint(p.ID),
		placement: C.nvmlGpuInstancePlacement_t{start: C.uint(m.Start), size: C.uint(p.PlacementSize)},
	}
	return success
}

//export nvmlGpuInstanceGetComputeInstanceById
func nvmlGpuInstanceGetComputeInstanceById(gi C.nvmlGpuInstance_t, id C.uint, ci *C.nvmlComputeInstance_t) C.nvmlReturn_t {
	trace("nvmlGpuInstanceGetComputeInstanceById")
	ref, ret := refFor(giByAddr, unsafe.Pointer(gi.handle))
	if ret != success {
		return ret
	}
	if ci == nil {
		return invalidArg
	}
	if int(id) != ref.dev().CI {
		return notFound
	}
	*ci = ciHandles[ref.gpu][ref.mig]
	return success
}

// Only the compute-instance profile spanning the whole GPU instance (shared engines) exists:
// the one static layouts create; smaller ones ("1c.3g...") are NOT_SUPPORTED here.
//
//export nvmlGpuInstanceGetComputeInstanceProfileInfo
func nvmlGpuInstanceGetComputeInstanceProfileInfo(gi C.nvmlGpuInstance_t, profile, eng C.uint, info *C.nvmlComputeInstanceProfileInfo_t) C.nvmlReturn_t {
	trace("nvmlGpuInstanceGetComputeInstanceProfileInfo")
	ref, ret := refFor(giByAddr, unsafe.Pointer(gi.handle))
	if ret != success {
		return ret
	}
	if info == nil || profile >= C.NVML_COMPUTE_INSTANCE_PROFILE_COUNT || eng >= C.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT {
		return invalidArg
	}
	p := ref.profile()
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
func nvmlComputeInstanceGetInfo_v2(ci C.nvmlComputeInstance_t, info *C.nvmlComputeInstanceInfo_t) C.nvmlReturn_t {
	trace("nvmlComputeInstanceGetInfo_v2")
	ref, ret := refFor(ciByAddr, unsafe.Pointer(ci.handle))
	if ret != success {
		return ret
	}
	if info == nil {
		return invalidArg
	}
	m, p := ref.dev(), ref.profile()
	*info = C.nvmlComputeInstanceInfo_t{
		device: migHandles[ref.gpu][ref.mig], gpuInstance: giHandles[ref.gpu][ref.mig],
		id: C.uint(m.CI), profileId: C.uint(ciProfileBySlices[p.Slices]),
		placement: C.nvmlComputeInstancePlacement_t{start: 0, size: C.uint(p.Slices)},
	}
	return success
}
