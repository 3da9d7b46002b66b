.PHONY: test test-quick lint demo bench
test:
	bash scripts/test.sh
test-quick:
	bash scripts/test-quick.sh
lint:
	bash scripts/lint.sh
demo:
	go run ./cmd/safeput demo
bench:
	bash scripts/bench.sh
