package main

/*
#cgo CFLAGS: -DNVML_NO_UNVERSIONED_FUNC_DEFS -Wno-deprecated-declarations
#include <stdlib.h>
#include "nvml.h"
*/
import "C"

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"unsafe"
)

// The live MIG state of this process: per GPU its MIG mode (current and pending) and its GPU
// instances, each with its compute instances; one compute instance is one MIG device. Static
// MIG (the config's migDevices) is the state at the first nvmlInit; DynamicMIG (migcreate.go)
// changes it. Everything here is guarded by mu (exports.go).

type gpuInstance struct {
	gpu     int // index into cfg.Devices
	id      int
	profile *MigProfile
	start   int
	handle  C.nvmlGpuInstance_t
	cis     []*computeInstance // by id
}

type computeInstance struct {
	gi     *gpuInstance
	id     int
	uuid   string
	handle C.nvmlComputeInstance_t
	dev    C.nvmlDevice_t // the MIG device's handle
}

// Handles are one malloc'd byte each: real addresses the caller may keep. A destroyed
// instance's handles leave the tables (INVALID_ARGUMENT from then on, as NVML says of stale
// handles) and are not freed, so no later instance reuses the address.
var (
	migCurrent []bool
	migPending []bool
	gis        [][]*gpuInstance // per GPU, by id
	migByAddr  = map[uintptr]*computeInstance{}
	giByAddr   = map[uintptr]*gpuInstance{}
	ciByAddr   = map[uintptr]*computeInstance{}
	created    int // compute instances created so far: seeds new MIG devices' UUIDs
)

// makeMigHandles: the config's state, once, at the first nvmlInit (initialize, under mu). The
// static MIG devices' capability files are the harness's (nvidiamig.py write_mig_files).
func makeMigHandles(c *Config) {
	for g, d := range c.Devices {
		migCurrent = append(migCurrent, d.MigEnabled)
		migPending = append(migPending, d.MigEnabled)
		gis = append(gis, nil)
		for _, m := range d.MigDevices {
			gi := addGpuInstance(g, d.migProfile(m.ProfileID), m.Start, m.GI)
			addComputeInstance(gi, m.CI, m.UUID)
		}
	}
}

func addGpuInstance(g int, p *MigProfile, start, id int) *gpuInstance {
	gi := &gpuInstance{gpu: g, id: id, profile: p, start: start}
	gi.handle = C.nvmlGpuInstance_t{handle: (*C.struct_nvmlGpuInstance_st)(C.malloc(1))}
	giByAddr[uintptr(unsafe.Pointer(gi.handle.handle))] = gi
	gis[g] = append(gis[g], gi)
	sort.Slice(gis[g], func(i, j int) bool { return gis[g][i].id < gis[g][j].id })
	return gi
}

func addComputeInstance(gi *gpuInstance, id int, uuid string) *computeInstance {
	ci := &computeInstance{gi: gi, id: id, uuid: uuid}
	ci.handle = C.nvmlComputeInstance_t{handle: (*C.struct_nvmlComputeInstance_st)(C.malloc(1))}
	ci.dev = C.nvmlDevice_t{handle: (*C.struct_nvmlDevice_st)(C.malloc(1))}
	ciByAddr[uintptr(unsafe.Pointer(ci.handle.handle))] = ci
	migByAddr[uintptr(unsafe.Pointer(ci.dev.handle))] = ci
	gi.cis = append(gi.cis, ci)
	sort.Slice(gi.cis, func(i, j int) bool { return gi.cis[i].id < gi.cis[j].id })
	return ci
}

func removeComputeInstance(ci *computeInstance) {
	delete(ciByAddr, uintptr(unsafe.Pointer(ci.handle.handle)))
	delete(migByAddr, uintptr(unsafe.Pointer(ci.dev.handle)))
	kept := ci.gi.cis[:0]
	for _, other := range ci.gi.cis {
		if other != ci {
			kept = append(kept, other)
		}
	}
	ci.gi.cis = kept
}

func removeGpuInstance(gi *gpuInstance) {
	delete(giByAddr, uintptr(unsafe.Pointer(gi.handle.handle)))
	kept := gis[gi.gpu][:0]
	for _, other := range gis[gi.gpu] {
		if other != gi {
			kept = append(kept, other)
		}
	}
	gis[gi.gpu] = kept
}

// migDevicesOf: GPU g's MIG devices in NVML's index order here (GPU instance id, then compute
// instance id): what nvmlDeviceGetMigDeviceHandleByIndex walks.
func migDevicesOf(g int) []*computeInstance {
	var out []*computeInstance
	for _, gi := range gis[g] {
		out = append(out, gi.cis...)
	}
	return out
}

// freeID: the lowest id from `first` that `taken` does not hold (NVML's own choice is not
// modelled; the plugin only passes ids back: nvlib.go createMigDevice, deleteMigDevice).
func freeID(first int, taken func(int) bool) int {
	id := first
	for taken(id) {
		id++
	}
	return id
}

// newMigUUID: a MIG device UUID unique in this process, as NVML gives each new one its own.
func newMigUUID(parent string, gi, ci int) string {
	created++
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/gi%d/ci%d/%d", parent, gi, ci, created)))
	b := sum[:16]
	return fmt.Sprintf("MIG-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// --- capability files and device nodes, inside the driver root only ----------------------

// driverRoot is the directory of the config file (the harness's fake driver root), never "/":
// the capability files and nodes go below it (R/proc/driver is bound over /proc/driver in the
// node's mount namespace, where the plugin reads them: cdi.go GetDevNodesForMigDevice).
func driverRoot() (string, error) {
	path, err := filepath.Abs(os.Getenv(ConfigEnv))
	if err != nil {
		return "", err
	}
	root := filepath.Dir(path)
	if root == "/" {
		return "", fmt.Errorf("the config %s is not in a driver root of its own", path)
	}
	return root, nil
}

const capabilities = "proc/driver/nvidia/capabilities"

// capsMinors: the GPU instance's and compute instance's nvidia-caps minors, as the kernel
// driver's fixed table gives them (nvidiamig.py caps_minors: after config 1 and monitor 2, per
// GPU 15 GPU instances of 9 minors each, the GPU instance's then 8 compute instances').
func capsMinors(minor, gi, ci int) (int, int) {
	giMinor := 3 + minor*15*9 + gi*9
	return giMinor, giMinor + 1 + ci
}

func (gi *gpuInstance) accessDir() string {
	return filepath.Join(capabilities, fmt.Sprintf("gpu%d/mig/gi%d", cfg.Devices[gi.gpu].Minor, gi.id))
}

func (ci *computeInstance) accessDir() string {
	return filepath.Join(ci.gi.accessDir(), fmt.Sprintf("ci%d", ci.id))
}

func capNode(n int) string { return filepath.Join("dev/nvidia-caps", fmt.Sprintf("nvidia-cap%d", n)) }

// makeCapability writes <dir>/access ("DeviceFileMinor: N" as the kernel driver does) and
// mknods dev/nvidia-caps/nvidia-cap<N> (nvidia-caps' major from the config) under the root.
func makeCapability(dir string, minor int) error {
	root, err := driverRoot()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
		return err
	}
	text := fmt.Sprintf("DeviceFileMinor: %d\nDeviceFileMode: 292\nDeviceFileModify: 1\n", minor)
	if err := os.WriteFile(filepath.Join(root, dir, "access"), []byte(text), 0o444); err != nil {
		return err
	}
	node := filepath.Join(root, capNode(minor))
	if err := os.MkdirAll(filepath.Dir(node), 0o755); err != nil {
		return err
	}
	os.Remove(node) // one left by a process that ended without destroying its instances
	return syscall.Mknod(node, syscall.S_IFCHR|0o444, mkdev(cfg.CapsMajor, minor))
}

// removeCapability undoes makeCapability: the access file, its directory (empty once its
// compute instances' are gone) and the node.
func removeCapability(dir string, minor int) error {
	root, err := driverRoot()
	if err != nil {
		return err
	}
	for _, p := range []string{filepath.Join(dir, "access"), dir, capNode(minor)} {
		if err := os.Remove(filepath.Join(root, p)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// mkdev: Linux's makedev (glibc sysmacros.h gnu_dev_makedev).
func mkdev(major, minor int) int {
	return (major&0xfff)<<8 | (major&^0xfff)<<32 | (minor & 0xff) | (minor&^0xff)<<12
}
