package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// self returns this process's identity: its PID, its start time, the
// boot and the PID namespace.
func self() owner {
	pid := os.Getpid()
	start, _ := startTime(pid)
	return owner{PID: pid, Start: start, Boot: bootID(), PIDNamespace: pidNamespace()}
}

// ownerDead reports whether o is provably no longer running: it was
// recorded in this boot and this PID namespace (else its PID means
// nothing here), and its PID is free or taken by a process that started
// at another time.
func ownerDead(o owner) bool {
	boot, ns := bootID(), pidNamespace()
	if o.Start == "" || o.Boot == "" || o.PIDNamespace == "" || o.Boot != boot || o.PIDNamespace != ns {
		return false
	}
	start, err := startTime(o.PID)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && start != o.Start
}

// startTime returns field 22 of /proc/PID/stat: when the process started,
// in clock ticks since boot.
func startTime(pid int) (string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", err
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses: count from the last ")".
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return "", errors.New("malformed /proc/PID/stat")
	}
	fields := strings.Fields(string(data[i+1:])) // from field 3
	if len(fields) < 20 {
		return "", errors.New("malformed /proc/PID/stat")
	}
	return fields[19], nil
}

func bootID() string {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}

// ownedByMe reports whether fi's file belongs to this process's user.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
