module github.com/onceflow/onceflow/db

go 1.26
