package convert

import (
	"fmt"
	"strings"
)

// EscapePointerToken escapes one key for a JSON pointer (RFC 6901): ~
// becomes ~0 and / becomes ~1. It is hubspoke's one JSON-pointer escaper,
// for every package that writes pointers (crconvert, check).
func EscapePointerToken(key string) string {
	if !strings.ContainsAny(key, "~/") {
		return key
	}
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// UnescapePointerToken is EscapePointerToken's inverse. It fails on a ~
// not followed by 0 or 1.
func UnescapePointerToken(token string) (string, error) {
	if !strings.Contains(token, "~") {
		return token, nil
	}
	if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(token, "~0", ""), "~1", ""), "~") {
		return "", fmt.Errorf("invalid ~ escape in %q (use ~0 for ~ and ~1 for /)", token)
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~"), nil
}
