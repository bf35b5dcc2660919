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

// Package mutation applies the ordered rewrite rules of a PublishedResource
// (spec.mutation and spec.related[].mutation; contract §2.7) to generic
// objects.
//
// A Mutator is compiled once per PublishedResource generation (contract §7
// #20) and then applied to many objects, possibly from many goroutines. It
// never modifies its inputs.
//
// Paths are read with gjson and written with sjson, so existing paths such as
// "spec.users.#.name" keep the meaning they have in the reference. The object
// is encoded to JSON once per Apply, every rule works on those bytes, and the
// result is decoded once at the end.
//
// Rule kinds (when an item sets several members, the first in this order is
// used and the others are ignored):
//
//   - delete removes the value at the path. A missing path is a no-op.
//   - regex with an empty pattern writes the replacement as a string, creating
//     the path if needed. With a pattern, the current value is taken as a
//     string (strings as they are, null as "", other values as gjson's String
//     gives them: numbers and booleans as their JSON text, objects and arrays
//     as raw JSON), every match is replaced (with $1 / ${name} expansion) and the
//     result is written as a string. A missing path is a no-op: the field is
//     not created. (The reference created it with the replacement applied to
//     "", which makes a pattern such as "^(.*)$" add empty fields.)
//   - template runs a text/template (never html/template, so nothing is
//     escaped; contract §7 #4) with the functions of package templating and
//     writes its trimmed output as a string. The path is created if missing.
//   - cel evaluates a CEL expression under a cost limit (contract §7 #21) and
//     writes its result, converted to JSON, at the path. The path is created
//     if missing. A null result writes null; it does not delete the field.
//
// Template data: .Value is the gjson result at the path (printing it gives its
// string form; .String, .Int, .Bool, .Raw and .Exists work), .LocalObject and
// .Self are the object being mutated, .RemoteObject and .Other the other
// object (nil when there is none). The names LocalObject and RemoteObject are
// kept from the reference even where they read oddly.
//
// CEL variables, all dynamically typed: value (the value at the path, null if
// missing), self (the object being mutated) and other (the other object or
// null). Integers are CEL ints, other numbers doubles.
//
// Templates and CEL expressions see the object as left by the previous rules
// of the same list, as in the reference.
package mutation
