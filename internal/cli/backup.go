package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/migrate"
)

type backupOptions struct {
	kube    kubeFlags
	output  string
	version string
}

func newBackupCmd() *cobra.Command {
	o := &backupOptions{}
	cmd := &cobra.Command{
		Use:   "backup CRD-NAME -o FILE",
		Short: "Save every object of a CRD, full content, with a count and checksums",
		Long: `Backup writes every object of the CRD (plural.group), read at the storage
version (or --version), with its full content including status, to FILE:
JSON lines, a header holding the CRD itself, one line per object with its
SHA-256, and a trailer with the count and a checksum over all objects.
"hubspoke restore --verify -f FILE" checks a file without a cluster.

Exit status: 0 written, 1 failure, 2 usage error.`,
		Example: `  hubspoke backup widgets.example.com -o widgets-backup.jsonl`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output == "" {
				return usagef("-o FILE is required")
			}
			dyn, err := o.kube.dynamic()
			if err != nil {
				return err
			}
			tmp, err := os.CreateTemp(filepath.Dir(o.output), filepath.Base(o.output)+".tmp*")
			if err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			defer os.Remove(tmp.Name())
			res, err := migrate.WriteBackup(cmd.Context(), tmp, migrate.BackupOptions{CRD: args[0], Client: dyn, Version: o.version})
			if cerr := tmp.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("backup: %w", cerr)
			}
			if err != nil {
				return err
			}
			if err := os.Rename(tmp.Name(), o.output); err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d objects at %s written to %s (sha256 %s)\n", args[0], res.Count, res.Version, o.output, res.SHA256)
			return nil
		},
	}
	o.kube.add(cmd)
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "backup file to write (required)")
	cmd.Flags().StringVar(&o.version, "version", "", "version to read the objects at (default: the storage version)")
	return cmd
}

type restoreOptions struct {
	kube    kubeFlags
	file    string
	rules   string
	crdName string
	verify  bool
}

func newRestoreCmd() *cobra.Command {
	o := &restoreOptions{}
	cmd := &cobra.Command{
		Use:   "restore -f FILE [--rules RULES.yaml]",
		Short: "Restore the objects of a backup; idempotent",
		Long: `Restore verifies the backup FILE (every object's checksum, the count and the
total checksum) and writes each object back: created when missing, updated
when its content differs, left alone when equal, so a second run changes
nothing. Server-owned metadata (uid, resourceVersion, managedFields, ...)
is dropped; status is restored through the status subresource.

Objects at a version the CRD no longer serves are converted to the storage
version with the conversion rules given by --rules.

With --verify only the file is checked; no cluster is contacted.

Exit status: 0 restored (or verified), 1 failure, 2 usage error.`,
		Example: `  hubspoke restore -f widgets-backup.jsonl --verify
  hubspoke restore -f widgets-backup.jsonl --rules conversion.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.file == "" {
				return usagef("-f FILE is required")
			}
			f, err := os.Open(o.file)
			if err != nil {
				return fmt.Errorf("restore: %w", err)
			}
			b, err := migrate.ReadBackup(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", o.file, err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: backup of %s at %s taken %s: %d objects, sha256 %s: verified\n",
				o.file, b.Header.CRD, b.Header.Version, b.Header.Created.Format("2006-01-02 15:04:05Z"), len(b.Objects), b.SHA256)
			if o.verify {
				return nil
			}
			ropts := migrate.RestoreOptions{CRD: o.crdName}
			if o.rules != "" {
				conv, err := rules.LoadFile(o.rules)
				if err != nil {
					return usageError{Err: err}
				}
				ropts.Converter = conv
			}
			if ropts.Client, err = o.kube.dynamic(); err != nil {
				return err
			}
			res, err := migrate.Restore(cmd.Context(), b, ropts)
			if res != nil {
				fmt.Fprintf(out, "restored: %d created, %d updated, %d unchanged (%d converted from versions no longer served)\n",
					res.Created, res.Updated, res.Unchanged, res.Converted)
			}
			return err
		},
	}
	o.kube.add(cmd)
	cmd.Flags().StringVarP(&o.file, "file", "f", "", "backup file to restore (required)")
	cmd.Flags().StringVar(&o.rules, "rules", "", "conversion rules, to convert objects of versions no longer served")
	cmd.Flags().StringVar(&o.crdName, "crd-name", "", "restore into this CRD instead of the one named in the backup")
	cmd.Flags().BoolVar(&o.verify, "verify", false, "only verify the file's count and checksums")
	return cmd
}
