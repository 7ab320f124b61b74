package lang

import "testing"

// TestIsJSONPlan: the JSON an answer gives is a plan by its shape (a
// solution, or an array of calls), whether or not the plan checks; an
// input restated, a result, a context document or a list of values is
// not; invalid JSON is a plan when it names a call's tool.
func TestIsJSONPlan(t *testing.T) {
	for src, want := range map[string]bool{
		`{"calls": [{"_tool": "f"}], "output": null}`: true,
		`{"calls": []}`:                                      true,
		`[{"_tool": "f", "x": 1}]`:                           true,
		`[{"_task": "find it", "_using": ["f"]}]`:            true,
		`{"calls": [{"_tool": "f", "x": }]}`:                 true,
		`{"customerId": "cust_123", "amount": 50}`:           false,
		`[{"type": "tool", "name": "f"}]`:                    false,
		`{"type": "input", "fields": {}}`:                    false,
		`[1, 2, 3]`:                                          false,
		`[]`:                                                 false,
		`"calls"`:                                            false,
		`{"name": "Ada", "orders": [{"id": 1}]`:              false,
		"// the plan\n{\"calls\": [{\"_tool\": \"f\"},],}\n": true,
	} {
		if got := IsJSONPlan([]byte(src)); got != want {
			t.Errorf("IsJSONPlan(%s) = %v, want %v", src, got, want)
		}
	}
}
