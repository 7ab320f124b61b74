package journal

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// errNoProcess is returned by processStart for a pid no process has.
var errNoProcess = errors.New("no such process")

// processStart returns when the process with the pid started, to the
// microsecond, from the kernel's process table.
func processStart(pid int) (string, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return "", err
	}
	if k.Proc.P_pid != int32(pid) {
		return "", errNoProcess
	}
	if k.Proc.P_stat == 5 { // SZOMB: dead, not yet reaped
		return "", errNoProcess
	}
	t := k.Proc.P_starttime
	return fmt.Sprintf("%d.%06d", t.Sec, t.Usec), nil
}
