package rules_test

// The example rule files (the fleet among them) have cel rules: link the
// CEL environment, as the hubspoke binaries do.
import _ "github.com/hubspoke/hubspoke/convert/celenv"
