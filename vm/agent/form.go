package agent

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
)

// answerForm is the form a model is asked to answer in: .plan text, or
// the JSON form held to the schema of a plan of the offered tools. When
// the server refuses the schema, the form falls back to text for good.
type answerForm struct {
	form string
	// schema is the JSON answer's, and tools the signatures that read it.
	schema map[string]any
	tools  map[string]*compiler.Tool
	// fallback says why the JSON form was given up, once it was.
	fallback string
}

// newAnswerForm returns the form asked for ("" is FormText), with the
// schema of the context's plans when it is FormJSON. A context whose
// schema cannot be made (no tool is offered) is asked for text, and says
// why.
func newAnswerForm(form string, c *Context, cfg compiler.Config) (*answerForm, error) {
	switch form {
	case "", FormText:
		return &answerForm{form: FormText}, nil
	case FormJSON:
	default:
		return nil, fmt.Errorf("unknown answer form %q: use %s or %s", form, FormText, FormJSON)
	}
	f := &answerForm{form: FormJSON}
	f.refresh(c, cfg)
	return f, nil
}

// refresh makes the schema again, for a context whose declarations grew.
func (f *answerForm) refresh(c *Context, cfg compiler.Config) {
	if f.form != FormJSON {
		return
	}
	schema, err := PlanSchema(c, cfg)
	if err == nil {
		var sigs []*compiler.Tool
		sigs, err = offeredSignatures(c, cfg)
		f.tools = toolsByName(sigs)
	}
	if err != nil {
		f.form, f.fallback = FormText, fmt.Sprintf("no schema of a plan: %v; the model answers in plan text", err)
		return
	}
	f.schema = schema
}

// request sets the schema of a request in the JSON form.
func (f *answerForm) request(req *llm.Request) *llm.Request {
	req.Schema = nil
	if f.form == FormJSON {
		req.Schema = &llm.Schema{Name: schemaName, Description: "A plan in Obelisk's JSON form: its calls and its output.", JSON: f.schema}
	}
	return req
}

// refused reports whether err is the server's refusal of the schema, and
// then falls back to text.
func (f *answerForm) refused(err error) bool {
	if f.form != FormJSON || !errors.Is(err, llm.ErrSchemaRejected) {
		return false
	}
	f.form = FormText
	f.fallback = fmt.Sprintf("the server refused the schema of a plan, so the model answers in plan text: %v", err)
	return true
}

// read reads the plan in an answer: what the answer reader finds, with
// the nulls a strict schema makes a JSON answer write left out, and the
// code blocks set aside when none of them is a plan.
func (f *answerForm) read(text string) (string, missedBlocks) {
	answer, missed := readAnswer(text)
	if f.form == FormJSON && planfile.IsJSON("", []byte(answer)) {
		answer = dropNulls(answer, f.tools)
	}
	return answer, missed
}

// promptTokens is the size of a request's prompt in tokens: counted, as
// the provider reported it, or, when it reported none (some local
// servers), estimated at a token for four bytes of the system prompt, the
// messages and the schema.
func promptTokens(counted int64, req *llm.Request) int64 {
	if counted > 0 {
		return counted
	}
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Content)
	}
	if req.Schema != nil {
		b, _ := json.Marshal(req.Schema.JSON)
		n += len(b)
	}
	return int64(n+3) / 4
}
