package iptables

import (
	"bytes"
	"fmt"

	"k8s.io/utils/set"
)

// LineData is one line of iptables-restore input and its number (from 1).
type LineData struct {
	Line int
	Data string
}

// MakeChainLine is the iptables-restore line that declares (and so flushes) chain: ":NAME - [0:0]",
// no policy ("-", a user chain) and zeroed counters (iptables-restore(8) input format).
func MakeChainLine(chain Chain) string {
	return fmt.Sprintf(":%s - [0:0]", chain)
}

// GetChainsFromTable is the set of chains an iptables-save dump of one table declares: the
// name after the ':' of each declaration line.
func GetChainsFromTable(save []byte) set.Set[Chain] {
	chains := set.New[Chain]()
	for _, line := range bytes.Split(save, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte(":")) {
			continue
		}
		name, _, _ := bytes.Cut(line[1:], []byte(" "))
		if len(name) > 0 {
			chains.Insert(Chain(name))
		}
	}
	return chains
}

// ExtractLines is the context of a failed line of iptables-restore input: the lines from
// line-count to line+count (numbered from 1, clipped to the input), or nil when line is
// outside it.
func ExtractLines(lines []byte, line, count int) []LineData {
	all := bytes.Split(bytes.TrimSuffix(lines, []byte("\n")), []byte("\n"))
	if len(lines) == 0 || line < 1 || line > len(all) {
		return nil
	}
	var out []LineData
	for n := max(1, line-count); n <= min(len(all), line+count); n++ {
		out = append(out, LineData{Line: n, Data: string(all[n-1])})
	}
	return out
}
