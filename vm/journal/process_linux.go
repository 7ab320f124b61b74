package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
)

// errNoProcess is returned by processStart for a pid no process has (a
// zombie, dead but not yet reaped, has none either).
var errNoProcess = errors.New("no such process")

// processStart returns when the process with the pid started, as the
// boot's ID and the start time in clock ticks since the boot (the 22nd
// field of /proc/PID/stat): unique to the process on the host, across
// reboots.
func processStart(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) {
		return "", errNoProcess
	}
	if err != nil {
		return "", err
	}
	// The command's name, in parentheses, may hold spaces and
	// parentheses: the fields are counted after its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is the state (field 3), fields[19] the start time (22).
	if len(fields) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return "", errNoProcess
	}
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(boot)) + "/" + fields[19], nil
}
