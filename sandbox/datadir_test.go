package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// childEnv makes the test binary a child process that a test kills: its
// value says what the child does (see childMain), childDirEnv in which
// directory.
const (
	childEnv    = "HUBSPOKE_SANDBOX_TEST_CHILD"
	childDirEnv = "HUBSPOKE_SANDBOX_TEST_CHILD_DIR"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode, os.Getenv(childDirEnv)))
	}
	os.Exit(m.Run())
}

// childMain creates a data directory in dir, alone ("datadir") or with a
// running sandbox ("sandbox"), prints its path and waits for standard
// input to end.
func childMain(mode, dir string) int {
	var path string
	switch mode {
	case "datadir":
		p, err := newDataDir(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		path = p
	case "sandbox":
		s, err := New(context.Background(), Options{TempDir: dir})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer s.Stop()
		path = s.DataDir()
	default:
		fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
		return 2
	}
	fmt.Println(path)
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// KillChild runs the test binary as a child that makes a data directory in
// dir (mode: see childMain), kills it with SIGKILL once the directory
// exists, and returns the directory's path.
func KillChild(t testing.TB, mode, dir string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childDirEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child (%s) said no data directory: %v\n%s", mode, err, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("child (%s) exited with %v, want killed", mode, err)
	}
	return strings.TrimSpace(line)
}

// TestRemoveDeadDataDirs: the data directory of a process killed with
// SIGKILL is removed, with its socket directory; a live process's, one
// without an owner file, and one whose owner cannot be proved dead (other
// boot, other PID namespace, unreadable) stay.
func TestRemoveDeadDataDirs(t *testing.T) {
	tmp := t.TempDir()
	dead := KillChild(t, "datadir", tmp)
	if _, err := os.Stat(filepath.Join(dead, ownerFile)); err != nil {
		t.Fatalf("the killed child's data directory: %v", err)
	}
	// A socket directory linked from the dead one, as socketPath makes.
	socketDir, err := os.MkdirTemp("", "hs-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(socketDir)
	if err := os.Symlink(socketDir, filepath.Join(dead, "egress-dir")); err != nil {
		t.Fatal(err)
	}
	// A directory of this (live) process.
	live, err := newDataDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	// Directories whose owner is not provably dead.
	me := self()
	keep := map[string]string{"live": live}
	for name, o := range map[string]any{
		"other boot":          owner{PID: 1 << 22, Start: "1", Boot: "another-boot", PIDNamespace: me.PIDNamespace},
		"other PID namespace": owner{PID: 1 << 22, Start: "1", Boot: me.Boot, PIDNamespace: "pid:[1]"},
		"no start time":       owner{PID: 1 << 22, Boot: me.Boot, PIDNamespace: me.PIDNamespace},
		"garbage":             "not an owner",
		"no owner file":       nil,
	} {
		dir, err := os.MkdirTemp(tmp, dataDirPattern)
		if err != nil {
			t.Fatal(err)
		}
		if o != nil {
			data, _ := json.Marshal(o)
			if err := os.WriteFile(filepath.Join(dir, ownerFile), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		keep[name] = dir
	}
	// A directory whose owner's PID was reused by a process started at
	// another time: its owner is dead.
	reused, err := os.MkdirTemp(tmp, dataDirPattern)
	if err != nil {
		t.Fatal(err)
	}
	o := me
	o.Start += "0"
	data, _ := json.Marshal(o)
	if err := os.WriteFile(filepath.Join(reused, ownerFile), data, 0o600); err != nil {
		t.Fatal(err)
	}

	removeDeadDataDirs(tmp, slog.New(slog.DiscardHandler))

	for _, gone := range []string{dead, socketDir, reused} {
		if _, err := os.Lstat(gone); !os.IsNotExist(err) {
			t.Errorf("%s after removeDeadDataDirs: %v, want it removed", gone, err)
		}
	}
	for name, dir := range keep {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s (%s) after removeDeadDataDirs: %v, want it kept", dir, name, err)
		}
	}
}
