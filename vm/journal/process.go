package journal

import (
	"fmt"
	"os"
	"syscall"
)

// A run's owner is the process that created or resumed it, named by its
// host, its pid and the time it started (see processStart). The time
// tells a process from a later one that reuses its pid: without it, a
// run whose process died could look owned by whatever process took the
// pid, or a run could be taken from a live owner whose pid a check
// misread.
//
// Ownership is taken in one transaction (Resume): SQLite's write lock,
// which BEGIN IMMEDIATE takes before the owner is read, orders the
// processes that resume a run at once; the first finds the owner gone
// and records itself, and each of the others finds it alive and is
// refused. There is no lease to renew and no heartbeat to miss: a live
// owner is never taken over because it was slow, and a dead one can be
// taken over at once, since the operating system says whether it lives.
// The cost is that only processes on the owner's host can tell: a run
// owned by a process on another host is taken over only with force.
type owner struct {
	host  string
	pid   int
	start string
}

// self returns the identity of this process.
func self() owner {
	host, _ := os.Hostname()
	pid := os.Getpid()
	start, _ := processStart(pid)
	return owner{host: host, pid: pid, start: start}
}

// String names the owner for a message.
func (o owner) String() string {
	if o.host == "" {
		return fmt.Sprintf("process %d", o.pid)
	}
	return fmt.Sprintf("process %d on %s", o.pid, o.host)
}

// alive reports whether the owner o may still run, as seen from the
// process me: it is me, or a process of me's host with its pid that
// started when it did. A process of another host cannot be seen, and
// counts as alive. A run recorded before owners had a start time is
// owned by any live process with its pid.
func (o owner) alive(me owner) bool {
	switch {
	case o.pid <= 0:
		return false
	case o.host != me.host:
		return true
	case o.pid == me.pid && o.start == me.start:
		return true
	}
	start, err := processStart(o.pid)
	if err == errNoProcess {
		return false
	}
	if err != nil || o.start == "" || start == "" {
		// The start time cannot be read or was not recorded: the pid
		// alone says.
		return signalable(o.pid)
	}
	return start == o.start
}

// signalable reports whether a process with the pid exists.
func signalable(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}
