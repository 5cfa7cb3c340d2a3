//go:build !hubspoke_nocel

package servecmd

// The webhook evaluates cel rules in the API server's CEL environment;
// every hubspoke binary links it through here (internal/cli imports this
// package too). Build with -tags hubspoke_nocel for a webhook without it
// (about 10 MB smaller; rule files with cel rules then fail to load).
import _ "github.com/hubspoke/hubspoke/convert/celenv"
