// Copyright 2026 The api-syncagent Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package mutation

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kcp-syncagent/api-syncagent/internal/templating"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// Rule kinds as they appear in error messages.
const (
	kindDelete   = "delete"
	kindRegex    = "regex"
	kindTemplate = "template"
	kindCEL      = "cel"
)

// Mutator applies one ordered rule list (the spec or the status rules of
// contract §2.7). It is built once per PublishedResource generation by
// Compile, is read-only afterwards and is safe for concurrent use. A nil
// Mutator applies no rules.
type Mutator struct {
	rules []rule
}

type rule struct {
	index int
	kind  string
	step  step
}

// step is one compiled rule, working on the JSON bytes held by the state.
type step interface {
	apply(s *state) error
}

// Compile parses and compiles every rule: regular expressions, templates
// (with templating.FuncMap) and CEL programs (with a cost limit). A nil or
// empty list gives a Mutator whose Apply returns an unchanged deep copy.
// Errors name the rule index and kind, e.g. "rule 2 (cel): ...".
func Compile(rules []syncagentv1alpha1.ResourceMutation) (*Mutator, error) {
	m := &Mutator{rules: make([]rule, 0, len(rules))}
	for i, r := range rules {
		kind, s, err := compileRule(i, r)
		if err != nil {
			if kind == "" {
				return nil, fmt.Errorf("rule %d: %w", i, err)
			}
			return nil, fmt.Errorf("rule %d (%s): %w", i, kind, err)
		}
		m.rules = append(m.rules, rule{index: i, kind: kind, step: s})
	}
	return m, nil
}

// compileRule compiles the member that wins by precedence:
// delete > regex > template > cel.
func compileRule(index int, r syncagentv1alpha1.ResourceMutation) (string, step, error) {
	switch {
	case r.Delete != nil:
		if err := checkPath(r.Delete.Path); err != nil {
			return kindDelete, nil, err
		}
		return kindDelete, &deleteStep{path: r.Delete.Path}, nil

	case r.Regex != nil:
		if err := checkPath(r.Regex.Path); err != nil {
			return kindRegex, nil, err
		}
		s := &regexStep{path: r.Regex.Path, replacement: r.Regex.Replacement}
		if r.Regex.Pattern != "" {
			re, err := regexp.Compile(r.Regex.Pattern)
			if err != nil {
				return kindRegex, nil, fmt.Errorf("invalid pattern: %w", err)
			}
			s.re = re
		}
		return kindRegex, s, nil

	case r.Template != nil:
		if err := checkPath(r.Template.Path); err != nil {
			return kindTemplate, nil, err
		}
		tpl, err := templating.Parse(fmt.Sprintf("rule-%d", index), r.Template.Template)
		if err != nil {
			return kindTemplate, nil, fmt.Errorf("invalid template: %w", err)
		}
		return kindTemplate, &templateStep{path: r.Template.Path, tpl: tpl}, nil

	case r.CEL != nil:
		if err := checkPath(r.CEL.Path); err != nil {
			return kindCEL, nil, err
		}
		prg, err := compileCEL(r.CEL.Expression)
		if err != nil {
			return kindCEL, nil, err
		}
		return kindCEL, &celStep{path: r.CEL.Path, prg: prg}, nil

	default:
		return "", nil, errors.New("must set one of delete, regex, template or cel")
	}
}

// checkPath rejects the empty path, which neither gjson nor sjson accepts.
func checkPath(path string) error {
	if path == "" {
		return errors.New("path must not be empty")
	}
	return nil
}

// Empty reports whether the Mutator has no rules, so that callers can skip
// the work of Apply.
func (m *Mutator) Empty() bool {
	return m == nil || len(m.rules) == 0
}

// Apply returns a mutated deep copy of self. Neither self nor other is
// modified; other may be nil. A nil self gives a nil result. The result holds
// only JSON types (integers as int64), so it can be used as unstructured
// content. Errors name the failing rule and wrap its cause.
func (m *Mutator) Apply(self, other map[string]any) (map[string]any, error) {
	if self == nil {
		return nil, nil
	}
	data, err := json.Marshal(self)
	if err != nil {
		return nil, fmt.Errorf("failed to encode object: %w", err)
	}

	s := &state{data: data, other: other}
	if m != nil {
		for _, r := range m.rules {
			if err := r.step.apply(s); err != nil {
				return nil, fmt.Errorf("rule %d (%s): %w", r.index, r.kind, err)
			}
		}
	}

	out, err := decodeObject(s.data)
	if err != nil {
		return nil, fmt.Errorf("failed to decode mutated object: %w", err)
	}
	return out, nil
}

// state is the work area of one Apply call.
type state struct {
	// data is the current JSON encoding of the object being mutated.
	data []byte
	// self caches data decoded for CEL; nil when data changed since.
	self map[string]any

	// other is the caller's object. It is never modified and never handed
	// to a template (sprig's set/unset could modify it).
	other map[string]any
	// otherJSON is other encoded, done on first use.
	otherJSON []byte
	// otherCEL is other decoded for CEL, done on first use.
	otherCEL    any
	otherCELSet bool
}

func (s *state) set(path string, value any) error {
	data, err := sjson.SetBytes(s.data, path, value)
	if err != nil {
		return fmt.Errorf("failed to set %q: %w", path, err)
	}
	s.replace(data)
	return nil
}

func (s *state) setRaw(path string, raw []byte) error {
	data, err := sjson.SetRawBytes(s.data, path, raw)
	if err != nil {
		return fmt.Errorf("failed to set %q: %w", path, err)
	}
	s.replace(data)
	return nil
}

func (s *state) replace(data []byte) {
	s.data = data
	s.self = nil
}

// selfForCEL returns the current object decoded. CEL cannot modify it, so it
// is cached until the next write.
func (s *state) selfForCEL() (map[string]any, error) {
	if s.self == nil {
		self, err := decodeObject(s.data)
		if err != nil {
			return nil, err
		}
		s.self = self
	}
	return s.self, nil
}

// freshSelf returns a newly decoded current object, for a template that
// might modify what it is given.
func (s *state) freshSelf() (map[string]any, error) {
	return decodeObject(s.data)
}

// freshOther returns a newly decoded copy of other, or nil.
func (s *state) freshOther() (map[string]any, error) {
	if s.other == nil {
		return nil, nil
	}
	if s.otherJSON == nil {
		data, err := json.Marshal(s.other)
		if err != nil {
			return nil, fmt.Errorf("failed to encode other object: %w", err)
		}
		s.otherJSON = data
	}
	return decodeObject(s.otherJSON)
}

// otherForCEL returns other decoded, or an untyped nil (a typed nil map
// would become an empty CEL map instead of null).
func (s *state) otherForCEL() (any, error) {
	if !s.otherCELSet {
		other, err := s.freshOther()
		if err != nil {
			return nil, err
		}
		if other != nil {
			s.otherCEL = other
		}
		s.otherCELSet = true
	}
	return s.otherCEL, nil
}

// decodeObject decodes a JSON object with integers as int64, as unstructured
// content expects.
func decodeObject(data []byte) (map[string]any, error) {
	var out map[string]any
	if err := utiljson.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

type deleteStep struct {
	path string
}

func (d *deleteStep) apply(s *state) error {
	data, err := sjson.DeleteBytes(s.data, d.path)
	if err != nil {
		return fmt.Errorf("failed to delete %q: %w", d.path, err)
	}
	s.replace(data)
	return nil
}

type regexStep struct {
	path        string
	re          *regexp.Regexp // nil for an empty pattern
	replacement string
}

func (r *regexStep) apply(s *state) error {
	if r.re == nil {
		return s.set(r.path, r.replacement)
	}
	current := gjson.GetBytes(s.data, r.path)
	if !current.Exists() {
		return nil
	}
	return s.set(r.path, r.re.ReplaceAllString(current.String(), r.replacement))
}

type templateStep struct {
	path string
	tpl  *template.Template
}

// templateData is what a template mutation sees.
type templateData struct {
	// Value is the value at the path. gjson.Result has a String method, so
	// {{ .Value }} prints the string form.
	Value gjson.Result
	// LocalObject is the object being mutated (name kept from the reference).
	LocalObject map[string]any
	// RemoteObject is the other object, or nil (name kept from the reference).
	RemoteObject map[string]any
	// Self is an alias of LocalObject.
	Self map[string]any
	// Other is an alias of RemoteObject.
	Other map[string]any
}

func (t *templateStep) apply(s *state) error {
	self, err := s.freshSelf()
	if err != nil {
		return err
	}
	other, err := s.freshOther()
	if err != nil {
		return err
	}
	data := templateData{
		Value:        gjson.GetBytes(s.data, t.path),
		LocalObject:  self,
		RemoteObject: other,
		Self:         self,
		Other:        other,
	}
	var out strings.Builder
	if err := t.tpl.Execute(&out, data); err != nil {
		return fmt.Errorf("failed to execute template: %w", err)
	}
	return s.set(t.path, strings.TrimSpace(out.String()))
}
