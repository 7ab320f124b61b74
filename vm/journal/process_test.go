package journal

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// TestOwnerAlive: a run's owner lives while a process of its host has its
// pid and started when it did; a process that reuses the pid is another
// owner, and a process of another host cannot be seen, so it counts as
// alive.
func TestOwnerAlive(t *testing.T) {
	me := self()
	if !me.alive(me) {
		t.Error("this process is not alive")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	gone := owner{host: me.host, pid: cmd.Process.Pid, start: me.start}
	if gone.alive(me) {
		t.Errorf("a process that has exited (pid %d) is alive", gone.pid)
	}
	if runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
		if me.start == "" {
			t.Fatal("no start time for this process")
		}
		reused := owner{host: me.host, pid: os.Getppid(), start: me.start}
		if reused.alive(me) {
			t.Error("a live process with another start time owns the run")
		}
		parent, err := processStart(os.Getppid())
		if err != nil || !(owner{host: me.host, pid: os.Getppid(), start: parent}).alive(me) {
			t.Errorf("the parent process is not alive: %v", err)
		}
	}
	if !(owner{host: me.host + ".elsewhere", pid: gone.pid}).alive(me) {
		t.Error("a process of another host counts as gone")
	}
	if (owner{}).alive(me) {
		t.Error("no owner is alive")
	}
}
