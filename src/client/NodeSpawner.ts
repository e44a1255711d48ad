/**
 * The only platform service the stdio client needs on Node: the child-process
 * spawner, with the file-system and path services it uses itself.
 *
 * `NodeServices.layer` provides the same spawner, but also loads the terminal
 * and stdio services; a stdio client that provides this layer instead starts
 * about 100 ms sooner (module loading, measured in BENCHMARKS.md).
 */
import * as NodeChildProcessSpawner from "@effect/platform-node/NodeChildProcessSpawner"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Layer from "effect/Layer"
import type { ChildProcessSpawner } from "effect/process"

export const layer: Layer.Layer<ChildProcessSpawner.ChildProcessSpawner> = NodeChildProcessSpawner.layer.pipe(
  Layer.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer))
)
