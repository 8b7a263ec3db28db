package localcluster

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
)

// watchdogScript reads process group IDs, one a line, until "done" or end of input. End of
// input without "done" means the launcher died without stopping the cluster (SIGKILL, a crash):
// the kernel closes the launcher's end of the pipe, and the script stops every group it was
// told about, so that nothing is left behind. It is a shell script rather than the launcher
// itself re-executed, so that any program (tests included) can use the package.
const watchdogScript = `
groups=
while read -r pgid; do
	[ "$pgid" = done ] && exit 0
	groups="$groups -$pgid"
done
[ -n "$groups" ] || exit 0
kill -s TERM -- $groups 2>/dev/null
sleep 5
kill -s KILL -- $groups 2>/dev/null
exit 0
`

// watchdog is the process that stops the cluster's processes when the launcher dies.
type watchdog struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// known are the process group IDs already sent.
	known map[int]bool
}

// startWatchdog starts the watchdog in a process group of its own, so that a Ctrl-C in the
// terminal does not reach it.
func startWatchdog() (*watchdog, error) {
	cmd := exec.Command("/bin/sh", "-c", watchdogScript)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("creating the watchdog's pipe: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the watchdog (/bin/sh): %w", err)
	}
	return &watchdog{cmd: cmd, stdin: stdin, known: map[int]bool{}}, nil
}

// watch tells the watchdog to stop process group pgid if the launcher dies.
func (w *watchdog) watch(pgid int) error {
	if w.known[pgid] {
		return nil
	}
	if _, err := fmt.Fprintln(w.stdin, pgid); err != nil {
		return fmt.Errorf("telling the watchdog about process group %d: %w", pgid, err)
	}
	w.known[pgid] = true
	return nil
}

// watchChildren tells the watchdog about every direct child of this process that leads its
// own process group. It finds the processes envtest starts (etcd, kube-apiserver), whose IDs
// envtest does not expose.
func (w *watchdog) watchChildren() error {
	pids, err := childGroupLeaders(os.Getpid())
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if pid == w.cmd.Process.Pid {
			continue
		}
		if err := w.watch(pid); err != nil {
			return err
		}
	}
	return nil
}

// done tells the watchdog that the launcher stopped everything itself, and waits for it.
func (w *watchdog) done() error {
	if _, err := fmt.Fprintln(w.stdin, "done"); err != nil {
		return fmt.Errorf("telling the watchdog to exit: %w", err)
	}
	if err := w.stdin.Close(); err != nil {
		return fmt.Errorf("closing the watchdog's pipe: %w", err)
	}
	if err := w.cmd.Wait(); err != nil {
		return fmt.Errorf("watchdog: %w", err)
	}
	return nil
}

// childGroupLeaders lists the processes whose parent is ppid and which lead their own process
// group, from /proc (Linux).
func childGroupLeaders(ppid int) ([]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	if len(stats) == 0 {
		return nil, fmt.Errorf("no processes under /proc: the local cluster needs Linux's /proc to track the processes envtest starts")
	}
	var pids []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // The process exited since the glob.
		}
		pid, parent, pgid, err := parseStat(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if parent == ppid && pgid == pid {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// parseStat reads the process ID, parent process ID and process group ID from the contents of
// /proc/PID/stat: "pid (comm) state ppid pgrp ...". comm may hold spaces and parentheses, so
// the fields after it are found from its last ')'.
func parseStat(data []byte) (pid, ppid, pgid int, err error) {
	open := bytes.IndexByte(data, '(')
	end := bytes.LastIndexByte(data, ')')
	if open < 1 || end < open {
		return 0, 0, 0, fmt.Errorf("malformed stat %q", data)
	}
	if pid, err = strconv.Atoi(string(bytes.TrimSpace(data[:open]))); err != nil {
		return 0, 0, 0, fmt.Errorf("malformed pid in stat %q", data)
	}
	fields := bytes.Fields(data[end+1:])
	if len(fields) < 3 {
		return 0, 0, 0, fmt.Errorf("malformed stat %q", data)
	}
	if ppid, err = strconv.Atoi(string(fields[1])); err != nil {
		return 0, 0, 0, fmt.Errorf("malformed ppid in stat %q", data)
	}
	if pgid, err = strconv.Atoi(string(fields[2])); err != nil {
		return 0, 0, 0, fmt.Errorf("malformed pgrp in stat %q", data)
	}
	return pid, ppid, pgid, nil
}
