package check

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEvolution(t *testing.T) {
	tests := []struct {
		name  string
		edits []string
		want  []key
	}{
		{name: "unchanged"},
		{
			name:  "field removed",
			edits: []string{"              legacy: {type: string, maxLength: 20}\n", ""},
			want:  []key{{Check: CheckFieldRemoved, From: "v1alpha1", To: "v1alpha1", Path: "/spec/legacy", Severity: SeverityError}},
		},
		{
			name:  "type changed",
			edits: []string{"legacy: {type: string, maxLength: 20}", "legacy: {type: integer}"},
			want:  []key{{Check: CheckFieldTightened, From: "v1alpha1", To: "v1alpha1", Path: "/spec/legacy", FromConstraint: "type string", ToConstraint: "type integer", Severity: SeverityError}},
		},
		{
			name:  "enum narrowed",
			edits: []string{"mode: {type: string, enum: [Fast, Slow]}", "mode: {type: string, enum: [Fast]}"},
			want:  []key{{Check: CheckFieldTightened, From: "v1alpha1", To: "v1alpha1", Path: "/spec/mode", FromConstraint: `enum ["Fast","Slow"] (accepts ["Slow"])`, ToConstraint: `enum ["Fast"]`, Severity: SeverityError}},
		},
		{
			name:  "bounds tightened",
			edits: []string{"replicas: {type: integer, format: int32, minimum: 0, maximum: 100}", "replicas: {type: integer, format: int32, minimum: 1, maximum: 100}"},
			want:  []key{{Check: CheckFieldTightened, From: "v1alpha1", To: "v1alpha1", Path: "/spec/replicas", FromConstraint: "minimum 0", ToConstraint: "minimum 1", Severity: SeverityError}},
		},
		{
			name:  "new required field",
			edits: []string{"          spec:\n            type: object\n            properties:\n              replicas:", "          spec:\n            type: object\n            required: [replicas]\n            properties:\n              replicas:"},
			want:  []key{{Check: CheckNewRequiredField, From: "v1alpha1", To: "v1alpha1", Path: "/spec/replicas", FromConstraint: "optional", ToConstraint: "required", Severity: SeverityError}},
		},
		{
			name:  "version removed",
			edits: []string{"  - name: v1beta1\n", "  - name: v1beta1x\n"},
			want:  []key{{Check: CheckVersionRemoved, From: "v1beta1", Severity: SeverityError}},
		},
		{
			name: "storage moved to a version while the old one is no longer served",
			edits: []string{
				"  - name: v1\n    served: true\n    storage: true", "  - name: v1\n    served: false\n    storage: false",
				"  - name: v1beta1\n    served: true\n    storage: false", "  - name: v1beta1\n    served: true\n    storage: true",
			},
			want: []key{
				{Check: CheckVersionUnserved, From: "v1", Severity: SeverityWarning},
				{Check: CheckStorageMoved, From: "v1", To: "v1beta1", Severity: SeverityError},
			},
		},
	}
	prev, _ := variant(t, nil, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, rules := variant(t, tt.edits, nil)
			r := Evolution(prev, next, rules)
			if diff := cmp.Diff(tt.want, keysOf(r)); diff != "" {
				t.Errorf("findings (-want +got):\n%s\n%s", diff, textOf(r))
			}
		})
	}
}

func TestEvolutionStoredVersions(t *testing.T) {
	prev, _ := variant(t, []string{"  versions:\n", "  versions:\n"}, nil)
	prev.Object.Status.StoredVersions = []string{"v1", "v1beta1"}
	next, _ := variant(t, []string{"  - name: v1beta1\n", "  - name: v1beta1x\n"}, nil)
	r := Evolution(prev, next, nil)
	want := []key{{Check: CheckVersionRemoved, From: "v1beta1", Severity: SeverityError}}
	if diff := cmp.Diff(want, keysOf(r)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s\n%s", diff, textOf(r))
	}
	if !strings.Contains(r.Findings[0].Message, "in status.storedVersions [v1 v1beta1]") {
		t.Errorf("stored version not named:\n%s", textOf(r))
	}
}
