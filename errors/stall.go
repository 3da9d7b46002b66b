package errors

// CodeStalled is the Code of an attempt cut by stall detection (retry.Policy's stall window): no
// request-body byte taken and no response byte received for the window. It is client-side (no
// store sends it) and Transient: the request is sent again from the bytes the writer still holds.
// It counts as a timeout (IsTimeout): the attempt held its connection for the whole window.
const CodeStalled = "Stalled"
