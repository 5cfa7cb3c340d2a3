package cli

import (
	"encoding/json"
	"io"

	"github.com/hubspoke/hubspoke/internal/yamljson"
)

// Report formats: -o text|json|yaml, as kubectl's -o, for the commands
// whose output is a report.

// checkReportFormat is a usage error unless format is text, json or yaml;
// hint ends the message (e.g. where the command's other output goes).
func checkReportFormat(format, hint string) error {
	switch format {
	case "text", "json", "yaml":
		return nil
	}
	return usagef("-o %q: want text, json or yaml%s", format, hint)
}

// writeStructured writes v as indented JSON, or as YAML converted from
// that JSON by internal/yamljson (the one YAML codec: key order and
// number literals kept).
func writeStructured(w io.Writer, format string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if data, err = yamljson.FromJSON(data); err != nil {
			return err
		}
	} else {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}
