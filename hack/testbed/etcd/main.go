// Command etcd runs the etcd server of the pinned go.etcd.io/etcd/server/v3 release.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
