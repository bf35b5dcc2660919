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
	"math"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/tidwall/gjson"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// celCostLimit caps the runtime cost of one evaluation of a CEL mutation
// (contract §7 #21). It is the per-expression limit Kubernetes uses for CEL
// in CRD validation: generous for real mutations (a few units per operation,
// string operations a tenth of a unit per byte), yet it stops a runaway
// comprehension after well under a second of CPU time in our tests.
// Exceeding it fails the object being mutated, not the agent.
const celCostLimit = 1_000_000

// celEnv declares the variables of a CEL mutation. An Env is safe for
// concurrent use, so one serves the whole process.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("value", cel.DynType),
		cel.Variable("self", cel.DynType),
		cel.Variable("other", cel.DynType),
	)
})

// CompileCEL compiles one expression in the mutation environment, for
// validation.
func CompileCEL(expression string) error {
	_, err := compileCEL(expression)
	return err
}

func compileCEL(expression string) (cel.Program, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("failed to create CEL environment: %w", err)
	}
	ast, issues := env.Compile(expression)
	if err := issues.Err(); err != nil {
		return nil, fmt.Errorf("invalid expression: %w", err)
	}
	prg, err := env.Program(ast, cel.CostLimit(celCostLimit))
	if err != nil {
		return nil, fmt.Errorf("failed to create CEL program: %w", err)
	}
	return prg, nil
}

type celStep struct {
	path string
	prg  cel.Program
}

func (c *celStep) apply(s *state) error {
	self, err := s.selfForCEL()
	if err != nil {
		return err
	}
	other, err := s.otherForCEL()
	if err != nil {
		return err
	}
	var value any // stays an untyped nil (CEL null) when the path is missing
	if current := gjson.GetBytes(s.data, c.path); current.Exists() {
		if err := utiljson.Unmarshal([]byte(current.Raw), &value); err != nil {
			return fmt.Errorf("failed to decode the value at %q: %w", c.path, err)
		}
	}

	result, err := c.eval(map[string]any{"value": value, "self": self, "other": other})
	if err != nil {
		return err
	}
	converted, err := toJSONValue(result)
	if err != nil {
		return fmt.Errorf("failed to convert the result: %w", err)
	}
	raw, err := json.Marshal(converted)
	if err != nil {
		return fmt.Errorf("failed to encode the result: %w", err)
	}
	return s.setRaw(c.path, raw)
}

// eval runs the program. cel-go already turns panics during evaluation
// (including the one that enforces the cost limit) into errors; the recover
// here guards against any that escape it.
func (c *celStep) eval(vars map[string]any) (result ref.Val, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, fmt.Errorf("CEL evaluation panicked: %v", r)
		}
	}()
	result, _, err = c.prg.Eval(vars)
	if err != nil {
		return nil, fmt.Errorf("failed to evaluate expression: %w", err)
	}
	return result, nil
}

// toJSONValue converts a CEL value into maps, lists, strings, numbers,
// booleans and nil. Timestamps and durations become their CEL string form,
// bytes are base64-encoded by encoding/json.
func toJSONValue(v ref.Val) (any, error) {
	switch v := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(v), nil
	case types.Int:
		return int64(v), nil
	case types.Uint:
		return uint64(v), nil
	case types.Double:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%v cannot be represented in JSON", f)
		}
		return f, nil
	case types.String:
		return string(v), nil
	case types.Bytes:
		return []byte(v), nil
	case types.Timestamp, types.Duration:
		str, ok := v.ConvertToType(types.StringType).(types.String)
		if !ok {
			return nil, fmt.Errorf("cannot convert %s to a string", v.Type().TypeName())
		}
		return string(str), nil
	case traits.Mapper:
		return mapToJSON(v)
	case traits.Lister:
		return listToJSON(v)
	case *types.Err:
		return nil, v
	}
	if v == nil {
		return nil, errors.New("no result")
	}
	return nil, fmt.Errorf("a CEL %s cannot be converted to JSON", v.Type().TypeName())
}

func mapToJSON(m traits.Mapper) (map[string]any, error) {
	out := map[string]any{}
	for it := m.Iterator(); it.HasNext() == types.True; {
		key := it.Next()
		name, ok := key.(types.String)
		if !ok {
			return nil, fmt.Errorf("map key %v is a %s, not a string", key, key.Type().TypeName())
		}
		value, err := toJSONValue(m.Get(key))
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", string(name), err)
		}
		out[string(name)] = value
	}
	return out, nil
}

func listToJSON(l traits.Lister) ([]any, error) {
	out := []any{}
	for it := l.Iterator(); it.HasNext() == types.True; {
		value, err := toJSONValue(it.Next())
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", len(out), err)
		}
		out = append(out, value)
	}
	return out, nil
}
