package main

import (
	"fmt"
	"math"
	"strings"
)

// MigProfile is one GPU-instance profile as NVML reports it (nvmlGpuInstanceProfileInfo_t and
// nvmlDeviceGetGpuInstancePossiblePlacements), from a fake_driver.facts.profiles MigProfile.
type MigProfile struct {
	Name            string `json:"name"`   // what go-nvlib must name it ("1g.10gb+me"): checked
	Index           int    `json:"index"`  // NVML_GPU_INSTANCE_PROFILE_* (the argument callers pass)
	ID              int    `json:"id"`     // the profile id NVML reports (`nvidia-smi mig -lgip`)
	Slices          int    `json:"slices"` // compute slices (the "g" of the name)
	PlacementStarts []int  `json:"placementStarts"`
	PlacementSize   int    `json:"placementSize"` // memory slices
	MemoryMiB       uint64 `json:"memoryMiB"`
	Multiprocessors int    `json:"multiprocessors"`
	CopyEngines     int    `json:"copyEngines"`
	Decoders        int    `json:"decoders"`
	Encoders        int    `json:"encoders"`
	JpegEngines     int    `json:"jpegEngines"`
	OfaEngines      int    `json:"ofaEngines"`
}

// MigDevice is one created MIG device: a GPU instance of profile ProfileID at Start with one
// compute instance spanning it (what static MIG layouts, mig-parted's, make).
type MigDevice struct {
	UUID      string `json:"uuid"` // MIG-...
	ProfileID int    `json:"profileId"`
	Start     int    `json:"start"`
	GI        int    `json:"gi"` // GPU instance id
	CI        int    `json:"ci"` // compute instance id within it
}

// The NVML_GPU_INSTANCE_PROFILE_* values by compute slices and kind, as go-nvlib v0.11.0
// pkg/nvlib/device/mig_profile.go NewMigProfile reads them back (slices, "+me", "-me").
var (
	giProfileSlices = map[int]int{0: 1, 1: 2, 2: 3, 3: 4, 4: 7, 5: 8, 6: 6, 7: 1, 8: 2, 9: 1, 10: 1, 11: 2, 12: 4, 13: 1, 14: 2, 15: 1, 16: 2}
	giProfileSuffix = map[int]string{7: "+me", 8: "+me", 15: "+me.all", 16: "+me.all", 10: "+gfx", 11: "+gfx", 12: "+gfx", 13: "-me", 14: "-me"}
	// NVML_COMPUTE_INSTANCE_PROFILE_* of a compute instance spanning `slices` compute slices.
	ciProfileBySlices = map[int]int{1: 0, 2: 1, 3: 2, 4: 3, 7: 4, 8: 5, 6: 6}
)

// nvlibName is the name go-nvlib gives a profile whose compute instance spans the GPU
// instance: <g>g.<gb>gb<suffix>, gb from the profile's share of the GPU's memory rounded up
// to eighths (mig_profile.go getMigMemorySizeGB), recomputed here from that description.
func nvlibName(p *MigProfile, gpuMemoryBytes uint64) string {
	const gib = 1 << 30
	share := math.Ceil(float64(p.MemoryMiB<<20)/float64(gpuMemoryBytes)*8) / 8
	gb := math.Round(share * float64((gpuMemoryBytes+gib-1)/gib))
	return fmt.Sprintf("%dg.%dgb%s", p.Slices, int(gb), giProfileSuffix[p.Index])
}

func (d *GPU) migProfile(id int) *MigProfile {
	for i := range d.MigProfiles {
		if d.MigProfiles[i].ID == id {
			return &d.MigProfiles[i]
		}
	}
	return nil
}

func (d *GPU) migProfileByIndex(index int) *MigProfile {
	for i := range d.MigProfiles {
		if d.MigProfiles[i].Index == index {
			return &d.MigProfiles[i]
		}
	}
	return nil
}

// maxMigDevices: NVML's nvmlDeviceGetMaxMigDeviceCount, the most GPU instances that fit.
func (d *GPU) maxMigDevices() int {
	most := 0
	for _, p := range d.MigProfiles {
		most = max(most, len(p.PlacementStarts))
	}
	return most
}

func validateMig(d *GPU, uuids map[string]bool) error {
	indexes, ids := map[int]bool{}, map[int]bool{}
	for _, p := range d.MigProfiles {
		if _, ok := giProfileSlices[p.Index]; !ok || indexes[p.Index] || ids[p.ID] {
			return fmt.Errorf("MIG profile %q: profile %d / id %d is not a unique NVML GPU instance profile", p.Name, p.Index, p.ID)
		}
		indexes[p.Index], ids[p.ID] = true, true
		if _, ok := ciProfileBySlices[p.Slices]; !ok || giProfileSlices[p.Index] != p.Slices {
			return fmt.Errorf("MIG profile %q: %d compute slices do not match NVML profile %d", p.Name, p.Slices, p.Index)
		}
		// Only where MIG is on, or DynamicMIG may turn it on, do callers name the profiles in
		// what they publish (the plugin's device names and profile attribute); a MIG-off GPU's
		// profiles are only enumerated.
		if got := nvlibName(&p, d.MemoryBytes); (d.MigEnabled || d.MigDynamic) && got != p.Name {
			return fmt.Errorf("MIG profile %q: with %d MiB of the GPU's %d MiB NVML callers would name it %q", p.Name, p.MemoryMiB, d.MemoryBytes>>20, got)
		}
	}
	if len(d.MigDevices) > 0 && !d.MigEnabled {
		return fmt.Errorf("MIG devices on a GPU with MIG mode off")
	}
	if (d.MigEnabled || d.MigDynamic) && len(d.MigProfiles) == 0 {
		return fmt.Errorf("MIG mode on a GPU without MIG profiles")
	}
	return validateMigDevices(d, uuids)
}

func validateMigDevices(d *GPU, uuids map[string]bool) error {
	used, gis := map[int]string{}, map[int]bool{}
	for _, m := range d.MigDevices {
		p := d.migProfile(m.ProfileID)
		if p == nil {
			return fmt.Errorf("MIG device %s: no MIG profile with id %d", m.UUID, m.ProfileID)
		}
		if !strings.HasPrefix(m.UUID, "MIG-") || uuids[m.UUID] {
			return fmt.Errorf("MIG device %d: uuid %q is not a unique MIG-... uuid", len(gis), m.UUID)
		}
		uuids[m.UUID] = true
		if !containsInt(p.PlacementStarts, m.Start) {
			return fmt.Errorf("MIG device %s: %s cannot start at memory slice %d (placements %v)", m.UUID, p.Name, m.Start, p.PlacementStarts)
		}
		for s := m.Start; s < m.Start+p.PlacementSize; s++ {
			if other, taken := used[s]; taken {
				return fmt.Errorf("MIG device %s: %s at %d overlaps %s at memory slice %d", m.UUID, p.Name, m.Start, other, s)
			}
			used[s] = p.Name
		}
		if gis[m.GI] || m.GI < 0 || m.CI != 0 {
			return fmt.Errorf("MIG device %s: GPU instance %d / compute instance %d not unique", m.UUID, m.GI, m.CI)
		}
		gis[m.GI] = true
	}
	return nil
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
