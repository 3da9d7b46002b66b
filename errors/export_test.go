package errors

import "slices"

// The external tests are driven by the tables Classify reads; users read them in the package doc.

func CodeTable() []codeRule { return slices.Clone(codeTable) }

func StatusTable() []statusRule { return slices.Clone(statusTable) }

func StoreFullCodes() []string { return slices.Clone(storeFullCodes) }

func MayHoldSecret(s string) bool { return mayHoldSecret(s) }

func SecretPatternMatches(s string) bool { return secretPattern().MatchString(s) }
