package servecmd

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/hubspoke/hubspoke/internal/yamljson"
)

func TestFormatVersion(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "-buildmode", Value: "exe"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-12-02T13:00:00Z"},
		{Key: "vcs.modified", Value: "false"},
	}
	dirty := append(vcs[:len(vcs)-1:len(vcs)-1], debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	tests := []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   string
	}{
		{"release with vcs info", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/hubspoke/hubspoke", Version: "v1.2.3"}, Settings: vcs},
			"v1.2.3 (revision 0123456789ab, built from a commit of 2026-12-02T13:00:00Z, go1.26.8)"},
		{"work tree, modified", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: dirty},
			"(devel) (revision 0123456789ab, modified, built from a commit of 2026-12-02T13:00:00Z, go1.26.8)"},
		{"-buildvcs=false", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"(devel) (revision unknown, go1.26.8)"},
		{"link-time version wins", "v9.9.9", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs},
			"v9.9.9 (revision 0123456789ab, built from a commit of 2026-12-02T13:00:00Z)"},
		{"no build info", "", nil, "(devel) (no build information)"},
		{"empty main version", "", &debug.BuildInfo{}, "(devel) (revision unknown)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatVersion(tt.linked, tt.bi); got != tt.want {
				t.Errorf("FormatVersion = %q, want %q", got, tt.want)
			}
		})
	}
	got, err := json.Marshal(ReadVersionInfo("", tests[1].bi))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":"(devel)","revision":"0123456789ab","modified":true,"commitTime":"2026-12-02T13:00:00Z","goVersion":"go1.26.8","buildInfo":true}`; string(got) != want {
		t.Errorf("-o json: %s, want %s", got, want)
	}
	// -o yaml reads back as -o json, as kubectl reads YAML.
	for _, bi := range []*debug.BuildInfo{tests[0].bi, tests[1].bi, tests[2].bi, nil} {
		v := ReadVersionInfo("", bi)
		j, _ := json.Marshal(v)
		y, err := yamljson.ToJSON(v.yaml())
		if err != nil || string(y) != string(j) {
			t.Errorf("-o yaml %q reads as %s (%v), -o json is %s", v.yaml(), y, err, j)
		}
	}
}

// TestVersionOfARealBuild builds the real hubspoke-webhook binary with
// VCS information (this machine sets GOFLAGS=-buildvcs=false, and the go
// command finds no repository in a git worktree, whose .git is a file):
// the module's files are copied into a fresh repository and committed,
// and the binary's version line must name that commit.
func TestVersionOfARealBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	modRoot, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(dir, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS="+os.Getenv("GOFLAGS")+" -buildvcs=true", "GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com",
			"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	for _, f := range strings.Fields(run(modRoot, "git", "ls-files", "-co", "--exclude-standard")) {
		data, err := os.ReadFile(filepath.Join(modRoot, f))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(dir, "git", "init", "-q")
	run(dir, "git", "add", "-A")
	run(dir, "git", "commit", "-qm", "snapshot")
	rev := run(dir, "git", "rev-parse", "HEAD")[:12]
	bin := filepath.Join(dir, "hubspoke-webhook")
	// Built with the caller's GOFLAGS (the last -buildvcs wins), so that
	// the dependencies come from the build cache as the tests compiled them.
	run(dir, "go", "build", "-o", bin, "./cmd/hubspoke-webhook")
	out := run(dir, bin, "version")
	// The go command stamps a pseudo-version from the commit, too.
	want := regexp.MustCompile(`^hubspoke-webhook v0\.0\.0-\d{14}-` + rev + ` \(revision ` + rev + `, built from a commit of \S+, go\S+\)\n$`)
	if !want.MatchString(out) {
		t.Errorf("version of a build with VCS information = %q, want it to match %s", out, want)
	}
}
