// Package examples shows safeput inside flush/sync code and columnar writers.
package examples
