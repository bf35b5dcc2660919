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

// Package templating provides the function set of every Go template in a
// PublishedResource (naming, mutations, related objects; contract §2.5):
// the sprig text functions plus sha3sum, sha3short and shortHash. Templates
// are text/template, never html/template, so nothing is HTML-escaped.
package templating

import (
	"crypto/sha1" //nolint:gosec // shortHash is fixed to SHA-1 by the contract for legacy names.
	"crypto/sha3"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// FuncMap returns a fresh function map for templates.
func FuncMap() template.FuncMap {
	funcs := sprig.TxtFuncMap()
	funcs["sha3sum"] = sha3sum
	funcs["sha3short"] = sha3short
	funcs["shortHash"] = shortHash
	return funcs
}

// Parse parses text as a template with the function map.
func Parse(name, text string) (*template.Template, error) {
	return template.New(name).Funcs(FuncMap()).Parse(text)
}

// sha3sum returns the lowercase hex SHA3-256 of s (64 characters). A missing
// or nil input counts as "" (the reference failed on it; contract §7 #3).
func sha3sum(s any) string {
	sum := sha3.Sum256([]byte(toString(s)))
	return hex.EncodeToString(sum[:])
}

// sha3short returns the first n (default 20, at most 64) characters of
// sha3sum. Template pipelines pass the piped value last, so the optional
// length comes first: {{ .x | sha3short }} or {{ .x | sha3short 8 }}.
func sha3short(args ...any) (string, error) {
	var (
		input any
		n     = 20
	)
	switch len(args) {
	case 0:
	case 1:
		input = args[0]
	case 2:
		length, ok := toInt(args[0])
		if !ok {
			return "", fmt.Errorf("sha3short: length %v is not an integer", args[0])
		}
		n, input = length, args[1]
	default:
		return "", errors.New("sha3short: at most one length may be given")
	}
	if n <= 0 {
		return "", fmt.Errorf("sha3short: length must be positive, got %d", n)
	}
	sum := sha3sum(input)
	if n > len(sum) {
		n = len(sum)
	}
	return sum[:n], nil
}

// shortHash returns the first 20 hex characters of the SHA-1 of a string's
// bytes, or of the JSON encoding plus a newline of any other value.
func shortHash(v any) (string, error) {
	var data []byte
	if s, ok := v.(string); ok {
		data = []byte(s)
	} else {
		encoded, err := json.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("shortHash: %w", err)
		}
		data = append(encoded, '\n')
	}
	sum := sha1.Sum(data) //nolint:gosec // see import.
	return hex.EncodeToString(sum[:])[:20], nil
}

func toString(v any) string {
	switch s := v.(type) {
	case nil:
		return ""
	case string:
		return s
	case fmt.Stringer:
		return s.String()
	default:
		return fmt.Sprint(s)
	}
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), n == float64(int(n))
	default:
		return 0, false
	}
}
