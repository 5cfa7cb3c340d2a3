package cli

import (
	"github.com/spf13/cobra"

	"github.com/hubspoke/hubspoke/internal/servecmd"
)

// newVersionCmd returns `hubspoke version`, shared with the slim webhook
// binary so that both report their version alike: set it at link time
// with -ldflags "-X github.com/hubspoke/hubspoke/internal/servecmd.version=v1.2.3".
func newVersionCmd() *cobra.Command { return servecmd.NewVersionCmd("hubspoke") }
