package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/migrate"
)

type backupOptions struct {
	kube     kubeFlags
	scope    scopeFlags
	selector string
	file     string
	force    bool
	output   string
	version  string
	progress string
}

func newBackupCmd() *cobra.Command {
	o := &backupOptions{}
	cmd := &cobra.Command{
		Use:   "backup CRD-NAME --file FILE|- [--force] [-n NAMESPACE | -A] [-l SELECTOR] [--version V] [-o text|json|yaml]",
		Short: "Save every object of a CRD, full content, with a count and checksums",
		Long: `Backup writes every object of the CRD (plural.group), read at the storage
version (or --version, which must be a served version of the CRD), with its
full content including status, to FILE: JSON lines, a header holding the
CRD itself, one line per object with its SHA-256, and a trailer with the
count and the checksums of the header and of all objects. The file is
written whole or not at all (a temporary file renamed); an existing FILE is
kept unless --force. --file - writes the backup to standard output (once
it is complete), and the report to standard error.
"hubspoke restore --verify -f FILE" checks a file without a cluster.

-n NAMESPACE saves one namespace's objects (the namespace must exist);
by default, or with -A, every namespace's. -l SELECTOR saves the objects
it selects. -o is the format of the report, as in kubectl.

Exit status: 0 written, 1 failure, 2 usage error.`,
		Example: `  hubspoke backup widgets.example.com --file widgets-backup.jsonl
  hubspoke backup widgets.example.com --file - -n team-a | gzip > team-a.jsonl.gz
  hubspoke backup widgets.example.com --file widgets-backup.jsonl --force -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	o.kube.add(cmd)
	o.scope.add(cmd)
	selectorFlag(cmd, &o.selector, "only")
	cmd.Flags().StringVar(&o.file, "file", "", "backup file to write, - for standard output (required)")
	cmd.Flags().BoolVar(&o.force, "force", false, "replace FILE if it exists")
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "report format: text, json or yaml")
	cmd.Flags().StringVar(&o.version, "version", "", "served version to read the objects at (default: the storage version)")
	progressFlag(cmd, &o.progress)
	return cmd
}

func (o *backupOptions) run(cmd *cobra.Command, name string) error {
	if o.file == "" {
		return usagef("--file FILE is required (-o is the report format, as in kubectl)")
	}
	if err := checkReportFormat(o.output, " (the backup file is --file)"); err != nil {
		return err
	}
	if err := checkSelector(o.selector); err != nil {
		return err
	}
	ns, err := o.scope.get()
	if err != nil {
		return err
	}
	toStdout := o.file == "-"
	if _, err := os.Stat(o.file); err == nil && !o.force && !toStdout {
		return usagef("%s exists: give --force to replace it, or another --file", o.file)
	}
	prog, err := newProgressPrinter(cmd.ErrOrStderr(), o.progress, "backup "+name)
	if err != nil {
		return err
	}
	dyn, err := o.kube.dynamic()
	if err != nil {
		return err
	}
	dir := filepath.Dir(o.file)
	if toStdout {
		dir = "" // the system's temporary directory
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(o.file)+".tmp*")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp.Name())
	ctx := cmd.Context()
	res, err := migrate.WriteBackup(ctx, tmp, migrate.BackupOptions{CRD: name, Client: dyn, Version: o.version, Namespace: ns, LabelSelector: o.selector,
		Progress: func(done, total int) { prog.update(snapshot{done: done, total: total, fresh: done}) }})
	prog.finish()
	if err == nil && toStdout {
		// The backup reaches standard output only once it is complete.
		if _, err = tmp.Seek(0, io.SeekStart); err == nil {
			if _, err = io.Copy(cmd.OutOrStdout(), tmp); err != nil {
				err = fmt.Errorf("backup: write to standard output: %w", err)
			}
		}
	}
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("backup: %w", cerr)
	}
	var ve *migrate.VersionError
	switch {
	case interrupted(ctx, err):
		return errors.New("interrupted; no backup written")
	case errors.As(err, &ve):
		return usagef("--version %s: %w", o.version, err)
	case err != nil:
		return err
	}
	report := cmd.OutOrStdout()
	if toStdout {
		report = cmd.ErrOrStderr()
	} else if !o.force {
		// Link fails if FILE appeared meanwhile: never replace it unasked.
		if err := os.Link(tmp.Name(), o.file); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
	} else if err := os.Rename(tmp.Name(), o.file); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if o.output != "text" {
		return writeStructured(report, o.output, struct {
			CRD           string `json:"crd"`
			Namespace     string `json:"namespace,omitempty"`
			LabelSelector string `json:"labelSelector,omitempty"`
			Version       string `json:"version"`
			Objects       int    `json:"objects"`
			File          string `json:"file"`
			SHA256        string `json:"sha256"`
		}{name, ns, o.selector, res.Version, res.Count, displayName(o.file, "<stdout>"), res.SHA256})
	}
	_, err = fmt.Fprintf(report, "%s: %d objects at %s written to %s (sha256 %s)\n", name, res.Count, res.Version, displayName(o.file, "<stdout>"), res.SHA256)
	return err
}

type restoreOptions struct {
	kube     kubeFlags
	file     string
	rules    string
	crdName  string
	selector string
	verify   bool
	dryRun   string
	output   string
	progress string
}

func newRestoreCmd() *cobra.Command {
	o := &restoreOptions{}
	cmd := &cobra.Command{
		Use:   "restore -f FILE|- [--rules RULES.yaml] [--crd-name NAME] [-l SELECTOR] [--verify] [--dry-run=none|client|server] [-o text|json|yaml]",
		Short: "Restore the objects of a backup; idempotent",
		Long: `Restore verifies the backup FILE (the checksums of the header and of every
object, the count, the total, no object twice) and writes each object
back: created when missing, updated when its content differs, left alone
when equal, so a second run changes nothing. Server-owned metadata (uid,
resourceVersion, managedFields, ...) is dropped; status is restored
through the status subresource.

Before the first write, every object is checked: the CRD's group and kind,
a name, a namespace that exists (none for a cluster-scoped CRD), a version
the CRD serves or --rules converts; then one object of each version is
written with a server-side dry run. Any problem stops the restore with
nothing written, naming each object and its line in FILE.

Objects at a version the CRD no longer serves are converted to the storage
version with the conversion rules given by --rules. --crd-name restores
into another CRD than the one the backup names (a CRD renamed, with the
same group and kind). -l SELECTOR restores the objects it selects.

--dry-run=server sends every write with dryRun=All: each object is
validated and admitted as the restore would write it, nothing is stored
(the status of an object it would create is not sent, as that object does
not exist). --dry-run=client only reads and compares. Both report what a
restore would do.

With --verify only the file is checked; no cluster is contacted. -f -
reads the backup from standard input.

Exit status: 0 restored (or verified), 1 failure, 2 usage error.`,
		Example: `  hubspoke restore -f widgets-backup.jsonl --verify
  hubspoke restore -f widgets-backup.jsonl --dry-run=server
  hubspoke restore -f widgets-backup.jsonl --rules conversion.yaml -l tier=gold
  hubspoke restore -f widgets-backup.jsonl --crd-name widgets.example.com -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.kube.add(cmd)
	selectorFlag(cmd, &o.selector, "restore only")
	cmd.Flags().StringVarP(&o.file, "file", "f", "", "backup file to restore, - for standard input (required)")
	cmd.Flags().StringVar(&o.rules, "rules", "", "conversion rules, to convert objects of versions no longer served")
	cmd.Flags().StringVar(&o.crdName, "crd-name", "", "restore into this CRD instead of the one named in the backup (same group and kind)")
	cmd.Flags().BoolVar(&o.verify, "verify", false, "only verify the file's count and checksums")
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "report format: text, json or yaml")
	dryRunFlag(cmd, &o.dryRun, "none; server: send every write with dryRun=All (validated, admitted, not stored); client: read and compare only")
	progressFlag(cmd, &o.progress)
	return cmd
}

// restoreReport is restore's report for -o json|yaml.
type restoreReport struct {
	File          string                 `json:"file"`
	CRD           string                 `json:"crd"`
	Version       string                 `json:"version"`
	Created       string                 `json:"created"`
	Namespace     string                 `json:"namespace,omitempty"`
	LabelSelector string                 `json:"labelSelector,omitempty"`
	Objects       int                    `json:"objects"`
	SHA256        string                 `json:"sha256"`
	HeaderSHA256  string                 `json:"headerSha256"`
	Verified      bool                   `json:"verified"`
	DryRun        string                 `json:"dryRun,omitempty"`
	Restored      *migrate.RestoreResult `json:"restored,omitempty"`
	Error         string                 `json:"error,omitempty"`
}

func (o *restoreOptions) run(cmd *cobra.Command) error {
	if o.file == "" {
		return usagef("-f FILE is required")
	}
	if err := checkDryRun(o.dryRun); err != nil {
		return err
	}
	if err := checkReportFormat(o.output, ""); err != nil {
		return err
	}
	if err := checkSelector(o.selector); err != nil {
		return err
	}
	b, err := readBackupFile(o.file, cmd.InOrStdin())
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	rep := restoreReport{File: displayName(o.file, "<stdin>"), CRD: b.Header.CRD, Version: b.Header.Version, Created: b.Header.Created.Format("2006-01-02 15:04:05Z"),
		Namespace: b.Header.Namespace, LabelSelector: b.Header.LabelSelector, Objects: len(b.Objects), SHA256: b.SHA256, HeaderSHA256: b.HeaderSHA256, Verified: true}
	if o.dryRun != "none" {
		rep.DryRun = o.dryRun
	}
	if o.output == "text" {
		fmt.Fprintf(out, "%s: backup of %s at %s taken %s: %d objects, sha256 %s: verified\n", rep.File, rep.CRD, rep.Version, rep.Created, rep.Objects, rep.SHA256)
	}
	if o.verify {
		if o.output != "text" {
			return writeStructured(out, o.output, rep)
		}
		return nil
	}
	ropts := migrate.RestoreOptions{CRD: o.crdName, LabelSelector: o.selector, DryRun: o.dryRun == "server", ListOnly: o.dryRun == "client"}
	if o.rules != "" {
		conv, err := rules.LoadFile(o.rules)
		if err != nil {
			return usageError{err}
		}
		ropts.Converter = conv
	}
	prog, err := newProgressPrinter(cmd.ErrOrStderr(), o.progress, "restore "+b.Header.CRD)
	if err != nil {
		return err
	}
	ropts.Progress = func(p migrate.RestoreProgress) {
		prog.update(snapshot{done: p.Done, total: p.Total, fresh: p.Done,
			fields: fmt.Sprintf("created=%d updated=%d unchanged=%d converted=%d", p.Created, p.Updated, p.Unchanged, p.Converted)})
	}
	if ropts.Client, err = o.kube.dynamic(); err != nil {
		return err
	}
	ctx := cmd.Context()
	res, err := migrate.Restore(ctx, b, ropts)
	prog.finish()
	if interrupted(ctx, err) {
		err = errInterrupted
	}
	rep.Restored = res
	if o.output != "text" {
		if err != nil {
			rep.Error = err.Error()
		}
		if werr := writeStructured(out, o.output, rep); werr != nil {
			return werr
		}
		return err
	}
	if res != nil {
		if o.dryRun == "none" {
			fmt.Fprintf(out, "restored: %d created, %d updated, %d unchanged (%d converted from versions no longer served)\n",
				res.Created, res.Updated, res.Unchanged, res.Converted)
		} else {
			fmt.Fprintf(out, "dry run (%s), nothing written: a restore would create %d, update %d and leave %d unchanged (%d converted from versions no longer served)\n",
				o.dryRun, res.Created, res.Updated, res.Unchanged, res.Converted)
		}
	}
	return err
}

// readBackupFile reads and verifies a backup file; "-" is standard input.
func readBackupFile(name string, stdin io.Reader) (*migrate.Backup, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := migrate.ReadBackup(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", displayName(name, "<stdin>"), err)
	}
	return b, nil
}

// displayName is file, or dash's name ("<stdin>", "<stdout>") for "-".
func displayName(file, dash string) string {
	if file == "-" {
		return dash
	}
	return file
}
