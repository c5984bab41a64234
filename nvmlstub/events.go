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
	"time"
	"unsafe"
)

// NVML's event API as the plugin's device health monitor uses it (sigs.k8s.io/dra-driver-nvidia-
// gpu@v0.4.1 and v0.5.0 cmd/gpu-kubelet-plugin/device_health.go: EventSetCreate,
// GetSupportedEventTypes, RegisterEvents, Wait(5000) in a loop, Free; go-nvml @v0.13.1-0
// pkg/nvml lib.go binds Wait to nvmlEventSetWait_v2 when the library exports it, else to
// nvmlEventSetWait). The events are the faults the harness writes into the root's control file
// (faults.go); a set sees only the lines written after it was created, as NVML delivers only
// events that happen after registration.

const (
	gpuIsLost = C.NVML_ERROR_GPU_IS_LOST
	timedOut  = C.NVML_ERROR_TIMEOUT
	// What the stand-in says a GPU supports: Xid critical errors and single/double-bit ECC,
	// the mask the plugin registers (device_health.go registerEventsForDevices).
	supportedEvents = C.nvmlEventTypeXidCriticalError | C.nvmlEventTypeSingleBitEccError | C.nvmlEventTypeDoubleBitEccError
	noInstance      = 0xFFFFFFFF // NVML's GI/CI id of an event not attributable to a MIG device
	pollInterval    = 50 * time.Millisecond
)

type eventSet struct {
	registered map[int]uint64 // GPU index -> registered event mask
	offset     int64          // control-file bytes this set has consumed
}

var eventSets = map[uintptr]*eventSet{} // guarded by mu

func eventSetOf(s C.nvmlEventSet_t) (*eventSet, C.nvmlReturn_t) {
	if inits == 0 {
		return nil, uninitialized
	}
	set, ok := eventSets[uintptr(unsafe.Pointer(s.handle))]
	if !ok {
		return nil, invalidArg
	}
	return set, success
}

//export nvmlEventSetCreate
func nvmlEventSetCreate(out *C.nvmlEventSet_t) C.nvmlReturn_t {
	trace("nvmlEventSetCreate")
	if _, ret := config(); ret != success {
		return ret
	}
	if out == nil {
		return invalidArg
	}
	offset := int64(0)
	if info, err := os.Stat(faultsPath()); err == nil {
		offset = info.Size()
	}
	mu.Lock()
	defer mu.Unlock()
	h := C.nvmlEventSet_t{handle: (*C.struct_nvmlEventSet_st)(C.malloc(1))}
	eventSets[uintptr(unsafe.Pointer(h.handle))] = &eventSet{registered: map[int]uint64{}, offset: offset}
	*out = h
	return success
}

//export nvmlEventSetFree
func nvmlEventSetFree(s C.nvmlEventSet_t) C.nvmlReturn_t {
	trace("nvmlEventSetFree")
	mu.Lock()
	defer mu.Unlock()
	if _, ret := eventSetOf(s); ret != success {
		return ret
	}
	delete(eventSets, uintptr(unsafe.Pointer(s.handle)))
	C.free(unsafe.Pointer(s.handle))
	return success
}

//export nvmlDeviceGetSupportedEventTypes
func nvmlDeviceGetSupportedEventTypes(h C.nvmlDevice_t, out *C.ulonglong) C.nvmlReturn_t {
	trace("nvmlDeviceGetSupportedEventTypes")
	if _, ret := device(h); ret != success {
		return ret
	}
	if out == nil {
		return invalidArg
	}
	*out = supportedEvents
	return success
}

// nvmlDeviceRegisterEvents answers NOT_SUPPORTED for a GPU the control file calls
// unmonitored: what NVML says of a GPU too old for health checking.
//
//export nvmlDeviceRegisterEvents
func nvmlDeviceRegisterEvents(h C.nvmlDevice_t, types C.ulonglong, s C.nvmlEventSet_t) C.nvmlReturn_t {
	trace("nvmlDeviceRegisterEvents")
	d, ret := device(h)
	if ret != success {
		return ret
	}
	if unmonitored(d.UUID) {
		return notSupported
	}
	mu.Lock()
	defer mu.Unlock()
	set, ret := eventSetOf(s)
	if ret != success {
		return ret
	}
	if uint64(types)&^supportedEvents != 0 {
		return notSupported
	}
	set.registered[indexOf(h)] |= uint64(types)
	return success
}

func eventSetWait(name string, s C.nvmlEventSet_t, data *C.nvmlEventData_t, timeoutms C.uint) C.nvmlReturn_t {
	trace(name)
	if data == nil {
		return invalidArg
	}
	deadline := time.Now().Add(time.Duration(timeoutms) * time.Millisecond)
	for {
		if ret, done := nextEvent(s, data); done {
			return ret
		}
		if !time.Now().Before(deadline) {
			return timedOut
		}
		time.Sleep(min(pollInterval, time.Until(deadline))) // an NVML wait blocks until an event or its timeout
	}
}

// nextEvent consumes the set's next control line, if any: (answer, true), else (_, false).
func nextEvent(s C.nvmlEventSet_t, data *C.nvmlEventData_t) (C.nvmlReturn_t, bool) {
	mu.Lock()
	set, ret := eventSetOf(s)
	mu.Unlock()
	if ret != success {
		return ret, true
	}
	for {
		line, number, next, ok := readLine(set.offset)
		if !ok {
			return success, false
		}
		set.offset = next
		f, err := parseFault(line)
		if err == nil {
			err = knownDevice(f.uuid)
		}
		if err != nil {
			reportMalformed(number, line, err)
			return unknownFailure, true
		}
		switch f.kind {
		case faultGPULost:
			return gpuIsLost, true
		case faultXid:
			if ret, delivered := fillXid(set, f, data); delivered {
				return ret, true
			}
		}
		// unmonitored and recovered change registration (read there), not the event stream.
	}
}

// fillXid writes an Xid critical error event for a GPU the set registered it for (as NVML,
// events of other GPUs are not delivered): a MIG device's event names its parent GPU with
// the device's GPU and compute instance ids, a full GPU's both 0xFFFFFFFF.
func fillXid(set *eventSet, f fault, data *C.nvmlEventData_t) (C.nvmlReturn_t, bool) {
	mu.Lock()
	defer mu.Unlock()
	gpu, gi, ci := -1, uint32(noInstance), uint32(noInstance)
	for i, d := range cfg.Devices {
		if d.UUID == f.uuid {
			gpu = i
		}
	}
	for _, m := range migByAddr {
		if m.uuid == f.uuid {
			gpu, gi, ci = m.gi.gpu, uint32(m.gi.id), uint32(m.id)
		}
	}
	if gpu < 0 || set.registered[gpu]&C.nvmlEventTypeXidCriticalError == 0 {
		return success, false
	}
	data.device = handles[gpu]
	data.eventType = C.nvmlEventTypeXidCriticalError
	data.eventData = C.ulonglong(f.xid)
	data.gpuInstanceId = C.uint(gi)
	data.computeInstanceId = C.uint(ci)
	return success, true
}

func knownDevice(uuid string) error {
	mu.Lock()
	defer mu.Unlock()
	var known []string
	for _, d := range cfg.Devices {
		known = append(known, d.UUID)
		if d.UUID == uuid {
			return nil
		}
	}
	for _, m := range migByAddr {
		if m.uuid == uuid {
			return nil
		}
	}
	return fmt.Errorf("no device %s here (GPUs: %v)", uuid, known)
}

//export nvmlEventSetWait_v2
func nvmlEventSetWait_v2(s C.nvmlEventSet_t, data *C.nvmlEventData_t, timeoutms C.uint) C.nvmlReturn_t {
	return eventSetWait("nvmlEventSetWait_v2", s, data, timeoutms)
}

//export nvmlEventSetWait
func nvmlEventSetWait(s C.nvmlEventSet_t, data *C.nvmlEventData_t, timeoutms C.uint) C.nvmlReturn_t {
	return eventSetWait("nvmlEventSetWait", s, data, timeoutms)
}
