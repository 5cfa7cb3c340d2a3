package servecmd

// The webhook evaluates cel rules in the API server's CEL environment;
// every hubspoke binary links it through here (internal/cli imports this
// package too).
import _ "github.com/hubspoke/hubspoke/convert/celenv"
