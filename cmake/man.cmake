# SPDX-License-Identifier: Apache-2.0
# A manual page from its Markdown source with go-md2man: the source's
# first line, "# NAME(SECTION)", becomes the page's title line.
# cmake -DIN=docs/x.1.md -DOUT=man/x.1 -DMD2MAN=go-md2man -DVERSION=1.0.0 -P man.cmake
file(READ "${IN}" text)
if(NOT text MATCHES "^# ([a-z0-9_.-]+)\\(([1-9])\\)\n")
  message(FATAL_ERROR "${IN}: the first line is not \"# NAME(SECTION)\"")
endif()
string(TOUPPER "${CMAKE_MATCH_1}" title)
set(section "${CMAKE_MATCH_2}")
# Everything after the first line (string(REGEX REPLACE "^...") would anchor
# "^" at every match and drop every line).
string(FIND "${text}" "\n" eol)
math(EXPR eol "${eol} + 1")
string(SUBSTRING "${text}" ${eol} -1 body)
file(WRITE "${OUT}.md" "% ${title} ${section} \"\" \"procctl ${VERSION}\" \"procctl manual\"\n${body}")
execute_process(COMMAND "${MD2MAN}" -in "${OUT}.md" -out "${OUT}" RESULT_VARIABLE rc)
file(REMOVE "${OUT}.md")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "go-md2man failed on ${IN}")
endif()
