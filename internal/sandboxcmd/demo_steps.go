package sandboxcmd

import "context"

// extraSteps are the demo's steps after the final verification: storage
// migration, storedVersions clean-up and the rollback path.
func (d *demo) extraSteps() []struct {
	title string
	run   func(context.Context) error
} {
	return nil
}
