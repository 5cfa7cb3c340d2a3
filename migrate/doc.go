// Package migrate makes the storage side of a multi-version
// CustomResourceDefinition safe to change.
//
// Switching `storage: true` to another version rewrites nothing: objects stay
// encoded in the version they were last written in, and a version cannot be
// removed from spec.versions while status.storedVersions lists it. This
// package provides the pieces an operator needs around that:
//
//   - Migrate re-encodes every object of a CRD at its current storage
//     version: a paged LIST, then a PUT of each object as read (with its
//     resourceVersion), which the API server re-encodes at the storage
//     version. Conflicts are retried after a fresh GET, NotFound is skipped,
//     429 honours Retry-After, transient errors back off, and any other
//     error stops the run naming the object. A checkpoint file lets an
//     interrupted run resume.
//   - Prune (or Options.Prune) then sets status.storedVersions to the
//     storage version alone, writing the CRD as freshly read, and only if
//     its spec (generation; a new caBundle aside) and storage version are
//     those of the start of the run: otherwise nothing is pruned and the
//     Result says why. A status write meanwhile (Kubernetes' migrator's
//     StorageMigrating condition) does not stop it.
//   - WriteBackup and Restore save and restore every object of a CRD with a
//     count and SHA-256 checksums (of the header too; ReadBackup refuses an
//     object there twice). Restore validates every object, and dry-runs a
//     sample, before its first write; it is idempotent and converts objects
//     whose version is no longer served with a convert.Converter.
//     ChangedSince lists the objects changed since a backup, by content at
//     the backup's version, through the conversions.
//   - PlanUpgrade and PlanRollback compute the ordered, gated steps of an
//     upgrade or a rollback; Plan.Execute measures every gate before the
//     first change (and changes nothing if one fails), then runs the steps,
//     stopping at the first step whose gate does not pass.
//
// Every function takes a dynamic client: the CRD itself is read and written
// as apiextensions.k8s.io/v1 customresourcedefinitions through it, so a
// k8s.io/client-go/dynamic/fake client is enough for tests. Build it from a
// rest.Config whose QPS is raised or -1 (no client-side limit, as the
// hubspoke CLI does): client-go's default of 5 requests per second and a
// burst of 10 would cap a migration at 5 objects per second. See
// docs/migrate.md for the operations runbook.
package migrate
