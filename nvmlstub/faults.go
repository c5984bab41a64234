package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The control file of faults, in the driver root beside the config (the harness appends to it
// while the plugin runs: harness/clusters/realnodes/nvidiafaults.py), one fault a line:
//
//	xid <uuid> <code>     an Xid critical error event on the GPU or MIG device <uuid>
//	gpu-lost <uuid>       the GPU fell off the bus: the next event wait answers GPU_IS_LOST
//	unmonitored <uuid>    registering the GPU's events answers NOT_SUPPORTED (read when the
//	                      plugin registers, at its start)
//	recovered <uuid>      undoes unmonitored from the next registration on
//
// A line that does not parse is reported once, in one line (stderr, which is the plugin's log,
// and FaultsLog), and the wait that read it answers NVML_ERROR_UNKNOWN.
const (
	FaultsFile = "nvml-faults.txt"
	FaultsLog  = "nvml-stub.log"
)

type faultKind string

const (
	faultXid         faultKind = "xid"
	faultGPULost     faultKind = "gpu-lost"
	faultUnmonitored faultKind = "unmonitored"
	faultRecovered   faultKind = "recovered"
)

type fault struct {
	kind faultKind
	uuid string
	xid  uint64
}

// parseFault reads one control line (no newline); blank and #-comment lines are not faults.
func parseFault(line string) (fault, error) {
	words := strings.Fields(line)
	if len(words) == 0 {
		return fault{}, fmt.Errorf("an empty line")
	}
	kind := faultKind(words[0])
	want := 2
	switch kind {
	case faultXid:
		want = 3
	case faultGPULost, faultUnmonitored, faultRecovered:
	default:
		return fault{}, fmt.Errorf("unknown fault %q (xid, gpu-lost, unmonitored, recovered)", words[0])
	}
	if len(words) != want {
		return fault{}, fmt.Errorf("%s takes %d word(s) after it, not %d", kind, want-1, len(words)-1)
	}
	f := fault{kind: kind, uuid: words[1]}
	if !strings.HasPrefix(f.uuid, "GPU-") && !strings.HasPrefix(f.uuid, "MIG-") {
		return fault{}, fmt.Errorf("%q is not a GPU-... or MIG-... uuid", f.uuid)
	}
	if kind == faultXid {
		code, err := strconv.ParseUint(words[2], 10, 64)
		if err != nil {
			return fault{}, fmt.Errorf("xid code %q is not a number", words[2])
		}
		f.xid = code
	}
	return f, nil
}

func faultsPath() string {
	root, err := driverRoot()
	if err != nil {
		return ""
	}
	return filepath.Join(root, FaultsFile)
}

func skipped(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || strings.HasPrefix(t, "#")
}

// readLine: the first complete, non-blank line at or after byte `offset` of the control file,
// its 1-based number, and the offset after it; ok false when there is none yet.
func readLine(offset int64) (string, int, int64, bool) {
	data, err := os.ReadFile(faultsPath())
	if err != nil || int64(len(data)) < offset {
		return "", 0, offset, false
	}
	for {
		end := bytes.IndexByte(data[offset:], '\n')
		if end < 0 {
			return "", 0, offset, false // a line still being written
		}
		line := string(data[offset : offset+int64(end)])
		number := bytes.Count(data[:offset], []byte("\n")) + 1
		offset += int64(end) + 1
		if !skipped(line) {
			return line, number, offset, true
		}
	}
}

// unmonitored: whether the control file's last unmonitored/recovered line for the GPU says
// unmonitored.
func unmonitored(uuid string) bool {
	data, err := os.ReadFile(faultsPath())
	if err != nil {
		return false
	}
	state := false
	for i, line := range strings.Split(string(data), "\n") {
		if skipped(line) {
			continue
		}
		f, err := parseFault(line)
		if err != nil {
			reportMalformed(i+1, line, err)
			continue
		}
		if f.uuid == uuid && (f.kind == faultUnmonitored || f.kind == faultRecovered) {
			state = f.kind == faultUnmonitored
		}
	}
	return state
}

var reported = map[int]bool{} // guarded by callsMu

func reportMalformed(number int, line string, err error) {
	callsMu.Lock()
	defer callsMu.Unlock()
	if reported[number] {
		return
	}
	reported[number] = true
	msg := fmt.Sprintf("libnvidia-ml.so.1 (dra-harness stand-in): %s line %d %q: %v\n", FaultsFile, number, line, err)
	fmt.Fprint(os.Stderr, msg)
	if root, rootErr := driverRoot(); rootErr == nil {
		if f, openErr := os.OpenFile(filepath.Join(root, FaultsLog), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); openErr == nil {
			defer f.Close()
			fmt.Fprint(f, msg)
		}
	}
}
