package errors

// Classify returns err as an *Error with a Kind. Placeholder: replaced by the classification table.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	return &Error{Kind: Transient, Err: err}
}
