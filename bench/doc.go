// Package bench compares safeput with the uploaders users would otherwise pick.
package bench
