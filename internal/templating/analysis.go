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

package templating

import (
	"reflect"
	"slices"
	"text/template"
	"text/template/parse"
)

// Workspace fields: the data of a template that the consumer does not
// choose (kcp names the workspace).
var workspaceFields = []string{"ClusterName", "ClusterPath"}

// AnyNode reports whether match holds for a node of the tree.
func AnyNode(node parse.Node, match func(parse.Node) bool) bool {
	if node == nil || reflect.ValueOf(node).IsNil() {
		return false
	}
	if match(node) {
		return true
	}
	return slices.ContainsFunc(children(node), func(c parse.Node) bool { return AnyNode(c, match) })
}

func children(node parse.Node) []parse.Node {
	switch n := node.(type) {
	case *parse.ListNode:
		return n.Nodes
	case *parse.ActionNode:
		return []parse.Node{n.Pipe}
	case *parse.PipeNode:
		out := make([]parse.Node, 0, len(n.Cmds))
		for _, c := range n.Cmds {
			out = append(out, c)
		}
		return out
	case *parse.CommandNode:
		return n.Args
	case *parse.ChainNode:
		return []parse.Node{n.Node}
	case *parse.IfNode:
		return []parse.Node{n.Pipe, n.List, n.ElseList}
	case *parse.RangeNode:
		return []parse.Node{n.Pipe, n.List, n.ElseList}
	case *parse.WithNode:
		return []parse.Node{n.Pipe, n.List, n.ElseList}
	case *parse.TemplateNode:
		return []parse.Node{n.Pipe}
	}
	return nil
}

// MentionsWorkspace reports whether the template reads .ClusterName or
// .ClusterPath anywhere ($.ClusterName and index . "ClusterName" count).
func MentionsWorkspace(tpl *template.Template) bool {
	if tpl == nil || tpl.Tree == nil {
		return false
	}
	return AnyNode(tpl.Root, func(n parse.Node) bool {
		var idents []string
		switch n := n.(type) {
		case *parse.FieldNode: // .ClusterName
			idents = n.Ident
		case *parse.VariableNode: // $.ClusterName
			if len(n.Ident) > 1 {
				idents = n.Ident[1:]
			}
		case *parse.StringNode: // index . "ClusterName"
			idents = []string{n.Text}
		}
		return len(idents) > 0 && slices.Contains(workspaceFields, idents[0])
	})
}

// EmbedsClusterName reports whether every output of the template contains
// the workspace's cluster name as it is: an action `{{ .ClusterName }}`
// stands at the top level, outside any condition or loop, with no function
// applied (at the top level the dot is always the data; $ can be
// reassigned).
func EmbedsClusterName(tpl *template.Template) bool {
	if tpl == nil || tpl.Tree == nil {
		return false
	}
	return slices.ContainsFunc(tpl.Root.Nodes, func(n parse.Node) bool {
		a, ok := n.(*parse.ActionNode)
		if !ok || len(a.Pipe.Decl) > 0 || len(a.Pipe.Cmds) != 1 || len(a.Pipe.Cmds[0].Args) != 1 {
			return false
		}
		f, ok := a.Pipe.Cmds[0].Args[0].(*parse.FieldNode)
		return ok && slices.Equal(f.Ident, []string{"ClusterName"})
	})
}

// ReadsOnlyWorkspace reports whether rendering the template reads nothing
// but .ClusterName and .ClusterPath, and, if side is set, .Side with that
// value: a branch `if eq .Side "…"` (or ne, either operand order) that
// cannot be taken on side is not looked at. Whatever reads the data as a
// whole (., $, a variable, a nested template) counts as reading the
// consumer's object. The answer comes from the template's text alone, so
// no value the consumer writes can change it.
func ReadsOnlyWorkspace(tpl *template.Template, side string) bool {
	if tpl == nil || tpl.Tree == nil {
		return true
	}
	return workspaceOnly(tpl.Root, side)
}

func workspaceOnly(node parse.Node, side string) bool {
	if node == nil || reflect.ValueOf(node).IsNil() {
		return true
	}
	switch n := node.(type) {
	case *parse.FieldNode:
		return slices.Contains(workspaceFields, n.Ident[0]) || side != "" && n.Ident[0] == "Side"
	case *parse.DotNode, *parse.VariableNode, *parse.ChainNode, *parse.TemplateNode:
		return false
	case *parse.IfNode:
		if taken, known := sideCondition(n.Pipe, side); known {
			if taken {
				return workspaceOnly(n.List, side)
			}
			return workspaceOnly(n.ElseList, side)
		}
	}
	return !slices.ContainsFunc(children(node), func(c parse.Node) bool { return !workspaceOnly(c, side) })
}

// sideCondition evaluates a condition of the form `eq .Side "x"` or
// `ne .Side "x"` (operands in either order) for side; known is false for
// any other condition.
func sideCondition(pipe *parse.PipeNode, side string) (taken, known bool) {
	if side == "" || pipe == nil || len(pipe.Decl) > 0 || len(pipe.Cmds) != 1 || len(pipe.Cmds[0].Args) != 3 {
		return false, false
	}
	args := pipe.Cmds[0].Args
	fn, ok := args[0].(*parse.IdentifierNode)
	if !ok || fn.Ident != "eq" && fn.Ident != "ne" {
		return false, false
	}
	isSide := func(n parse.Node) bool {
		f, ok := n.(*parse.FieldNode)
		return ok && len(f.Ident) == 1 && f.Ident[0] == "Side"
	}
	var value *parse.StringNode
	switch {
	case isSide(args[1]):
		value, _ = args[2].(*parse.StringNode)
	case isSide(args[2]):
		value, _ = args[1].(*parse.StringNode)
	}
	if value == nil {
		return false, false
	}
	return (value.Text == side) == (fn.Ident == "eq"), true
}

// volatileFuncs render differently on every call with the same input
// (time, randomness, salts, keys, DNS): an object shaped by one is never in
// line with its template.
var volatileFuncs = []string{
	"now", "ago", "randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes", "randInt", "uuidv4", "shuffle",
	"bcrypt", "htpasswd", "encryptAES", "genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert",
	"genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey", "getHostByName",
}

// Volatile returns the functions of volatileFuncs the template calls, each
// once, in the order they appear.
func Volatile(tpl *template.Template) []string {
	if tpl == nil || tpl.Tree == nil {
		return nil
	}
	var out []string
	AnyNode(tpl.Root, func(n parse.Node) bool {
		if id, ok := n.(*parse.IdentifierNode); ok && slices.Contains(volatileFuncs, id.Ident) && !slices.Contains(out, id.Ident) {
			out = append(out, id.Ident)
		}
		return false
	})
	return out
}
