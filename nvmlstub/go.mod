module dra-harness/nvmlstub

go 1.24
