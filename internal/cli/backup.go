package cli

import (
	"encoding/json"
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
	kube    kubeFlags
	scope   scopeFlags
	file    string
	force   bool
	output  string
	version string
}

func newBackupCmd() *cobra.Command {
	o := &backupOptions{}
	cmd := &cobra.Command{
		Use:   "backup CRD-NAME --file FILE [--force] [-n NAMESPACE] [-o text|json]",
		Short: "Save every object of a CRD, full content, with a count and checksums",
		Long: `Backup writes every object of the CRD (plural.group), read at the storage
version (or --version, which must be a served version of the CRD), with its
full content including status, to FILE: JSON lines, a header holding the
CRD itself, one line per object with its SHA-256, and a trailer with the
count and a checksum over all objects. The file is written whole or not at
all (a temporary file renamed); an existing FILE is kept unless --force.
"hubspoke restore --verify -f FILE" checks a file without a cluster.

-n NAMESPACE saves one namespace's objects; by default, or with -A, every
namespace's. -o is the format of the report, as in kubectl.

Exit status: 0 written, 1 failure, 2 usage error.`,
		Example: `  hubspoke backup widgets.example.com --file widgets-backup.jsonl
  hubspoke backup widgets.example.com --file widgets-backup.jsonl --force -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	o.kube.add(cmd)
	o.scope.add(cmd)
	cmd.Flags().StringVar(&o.file, "file", "", "backup file to write (required)")
	cmd.Flags().BoolVar(&o.force, "force", false, "replace FILE if it exists")
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "report format: text or json")
	cmd.Flags().StringVar(&o.version, "version", "", "served version to read the objects at (default: the storage version)")
	return cmd
}

func (o *backupOptions) run(cmd *cobra.Command, name string) error {
	if o.file == "" {
		return usagef("--file FILE is required (-o is the report format, as in kubectl)")
	}
	if o.output != "text" && o.output != "json" {
		return usagef("-o %q: want text or json (the backup file is --file)", o.output)
	}
	ns, err := o.scope.get()
	if err != nil {
		return err
	}
	if _, err := os.Stat(o.file); err == nil && !o.force {
		return usagef("%s exists: give --force to replace it, or another --file", o.file)
	}
	dyn, err := o.kube.dynamic()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(o.file), filepath.Base(o.file)+".tmp*")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp.Name())
	res, err := migrate.WriteBackup(cmd.Context(), tmp, migrate.BackupOptions{CRD: name, Client: dyn, Version: o.version, Namespace: ns})
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("backup: %w", cerr)
	}
	var ve *migrate.VersionError
	if errors.As(err, &ve) {
		return usagef("--version %s: %w", o.version, err)
	}
	if err != nil {
		return err
	}
	if !o.force {
		// Link fails if FILE appeared meanwhile: never replace it unasked.
		if err := os.Link(tmp.Name(), o.file); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
	} else if err := os.Rename(tmp.Name(), o.file); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	out := cmd.OutOrStdout()
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			CRD       string `json:"crd"`
			Namespace string `json:"namespace,omitempty"`
			Version   string `json:"version"`
			Objects   int    `json:"objects"`
			File      string `json:"file"`
			SHA256    string `json:"sha256"`
		}{name, ns, res.Version, res.Count, o.file, res.SHA256})
	}
	_, err = fmt.Fprintf(out, "%s: %d objects at %s written to %s (sha256 %s)\n", name, res.Count, res.Version, o.file, res.SHA256)
	return err
}

type restoreOptions struct {
	kube    kubeFlags
	file    string
	rules   string
	crdName string
	verify  bool
	dryRun  string
}

func newRestoreCmd() *cobra.Command {
	o := &restoreOptions{}
	cmd := &cobra.Command{
		Use:   "restore -f FILE|- [--rules RULES.yaml] [--dry-run=none|client|server]",
		Short: "Restore the objects of a backup; idempotent",
		Long: `Restore verifies the backup FILE (every object's checksum, the count and the
total checksum) and writes each object back: created when missing, updated
when its content differs, left alone when equal, so a second run changes
nothing. Server-owned metadata (uid, resourceVersion, managedFields, ...)
is dropped; status is restored through the status subresource.

Objects at a version the CRD no longer serves are converted to the storage
version with the conversion rules given by --rules.

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
  hubspoke restore -f widgets-backup.jsonl --rules conversion.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.file == "" {
				return usagef("-f FILE is required")
			}
			if err := checkDryRun(o.dryRun); err != nil {
				return err
			}
			b, err := readBackupFile(o.file, cmd.InOrStdin())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: backup of %s at %s taken %s: %d objects, sha256 %s: verified\n",
				displayName(o.file), b.Header.CRD, b.Header.Version, b.Header.Created.Format("2006-01-02 15:04:05Z"), len(b.Objects), b.SHA256)
			if o.verify {
				return nil
			}
			ropts := migrate.RestoreOptions{CRD: o.crdName, DryRun: o.dryRun == "server", ListOnly: o.dryRun == "client"}
			if o.rules != "" {
				conv, err := rules.LoadFile(o.rules)
				if err != nil {
					return usageError{err}
				}
				ropts.Converter = conv
			}
			if ropts.Client, err = o.kube.dynamic(); err != nil {
				return err
			}
			res, err := migrate.Restore(cmd.Context(), b, ropts)
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
		},
	}
	o.kube.add(cmd)
	cmd.Flags().StringVarP(&o.file, "file", "f", "", "backup file to restore, - for standard input (required)")
	cmd.Flags().StringVar(&o.rules, "rules", "", "conversion rules, to convert objects of versions no longer served")
	cmd.Flags().StringVar(&o.crdName, "crd-name", "", "restore into this CRD instead of the one named in the backup")
	cmd.Flags().BoolVar(&o.verify, "verify", false, "only verify the file's count and checksums")
	dryRunFlag(cmd, &o.dryRun, "none; server: send every write with dryRun=All (validated, admitted, not stored); client: read and compare only")
	return cmd
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
		return nil, fmt.Errorf("%s: %w", displayName(name), err)
	}
	return b, nil
}

func displayName(file string) string {
	if file == "-" {
		return "<stdin>"
	}
	return file
}
