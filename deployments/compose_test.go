package deployments

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// composeSchema compiles the Compose Specification's schema kept in
// schema/compose-spec.json (see schema/README.md); nothing is downloaded.
func composeSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(readFile(t, "schema/compose-spec.json")))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("compose-spec.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("compose-spec.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkCompose validates a compose file against the schema, then what the
// schema cannot say: every service another depends on exists.
func checkCompose(schema *jsonschema.Schema, data []byte) error {
	// Strict: a key given twice is an error, as it is for docker compose.
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	if err := schema.Validate(inst); err != nil {
		return err
	}
	var file struct {
		Services map[string]struct {
			DependsOn json.RawMessage `json:"depends_on"`
		} `json:"services"`
	}
	if err := json.Unmarshal(j, &file); err != nil {
		return err
	}
	for name, s := range file.Services {
		for _, dep := range dependencies(s.DependsOn) {
			if _, ok := file.Services[dep]; !ok {
				return fmt.Errorf("service %s depends on %s, which is not a service", name, dep)
			}
		}
	}
	return nil
}

// dependencies reads depends_on in either of its forms (a list of names, or
// a map from name to condition).
func dependencies(raw json.RawMessage) []string {
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	for k := range m {
		list = append(list, k)
	}
	sort.Strings(list)
	return list
}

func TestComposeFile(t *testing.T) {
	schema := composeSchema(t)
	good := string(readFile(t, "compose.yaml"))
	if err := checkCompose(schema, []byte(good)); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{"unknown service key", `    command: ["worker"]`, `    comand: ["worker"]`, "comand"},
		{"unknown top-level key", "services:\n", "service:\n", "service"},
		{"bad depends_on condition", "condition: service_completed_successfully", "condition: service_finished", "value must be one of"},
		{"wrong type", "image: postgres:15", "image: [postgres]", "/services/postgres/image"},
		{"bad ports entry", `ports: ["8081:8080"]`, `ports: [true]`, "/services/api-b/ports/0"},
		{"missing dependency", "depends_on: { postgres: { condition: service_healthy } }", "depends_on: { postgresql: { condition: service_healthy } }", "depends on postgresql, which is not a service"},
		{"duplicate key", "    command: [\"worker\"]", "    command: [\"worker\"]\n    command: [\"serve\"]", `key "command" already set`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Count(good, tt.old) != 1 {
				t.Fatalf("compose.yaml holds %q %d times, want once: update this case", tt.old, strings.Count(good, tt.old))
			}
			err := checkCompose(schema, []byte(strings.Replace(good, tt.old, tt.new, 1)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error naming %q", err, tt.want)
			}
		})
	}
	if got := dependencies(json.RawMessage(`["a","b"]`)); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("dependencies of a list = %q", got)
	}
}
