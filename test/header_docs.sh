#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# procctl.h documents itself: each public call's prototype has a comment
# giving its contract, and the error codes it names (-EXXX) are exactly
# those SPEC.md section 15's table gives that call (both sides may say
# "the errors of procctl_X" / "as `procctl_X`": X's codes are included).
# Every call of the table is in the header and every call of the header
# in the table.
# Usage: header_docs.sh SOURCE_DIR
set -eu
src=$1
exec perl -e '
use strict; use warnings;
my ($hdr, $spec) = @ARGV;
local $/; open my $h, "<", $hdr or die; my $H = <$h>; open my $s, "<", $spec or die; my $S = <$s>;
my (%spec, %doc, @fail);
# SPEC 15: the table rows up to the next section.
my ($sec) = $S =~ /^## 15\..*?\n(.*?)(?=^## |\z)/ms or die "no SPEC section 15\n";
for my $row (grep { /^\| `procctl_/ } split /\n/, $sec) {
	my @col = split /\s*\|\s*/, $row;
	my @names = $col[1] =~ /`(procctl_[a-z0-9_]+)\(/g;
	my $text = join " ", @col[2 .. $#col];
	$spec{$_} = $text for @names;
}
# procctl.h: each PROCCTL_API prototype (not a definition) and the comment
# just above it; a prototype right after another without one shares it.
my $last = "";
while ($H =~ /((?:\/\*(?:(?!\*\/).)*\*\/\n)?)PROCCTL_API [^;{]*?\b(procctl_[a-z0-9_]+)\([^;{]*?\);/gs) {
	my ($c, $name) = ($1, $2);
	$c = $last if $c eq "" && $doc{"__prev_adjacent"};
	$doc{$name} = $c;
	$last = $c;
	$doc{"__prev_adjacent"} = 1;
}
delete $doc{"__prev_adjacent"};
sub codes {
	my ($tbl, $name, $seen) = @_;
	return () if $seen->{$name}++;
	(my $t = $tbl->{$name} // "") =~ s/\n\s*\*?\s*/ /g;
	my %c = map { $_ => 1 } $t =~ /-(E[A-Z]+)/g;
	for my $ref ($t =~ /(?:as `|errors of )(procctl_[a-z0-9_]+)/g) {
		$c{$_} = 1 for codes($tbl, $ref, $seen);
	}
	return sort keys %c;
}
for my $n (sort keys %spec) {
	push @fail, "$n: in SPEC 15, not declared in procctl.h" unless exists $doc{$n};
}
for my $n (sort keys %doc) {
	if (!exists $spec{$n}) { push @fail, "$n: declared in procctl.h, not in SPEC 15"; next; }
	if ($doc{$n} !~ /\S/) { push @fail, "$n: no comment on its prototype"; next; }
	my $d = join " ", codes(\%doc, $n, {});
	my $w = join " ", codes(\%spec, $n, {});
	push @fail, "$n: procctl.h names [$d], SPEC 15 [$w]" if $d ne $w;
}
if (@fail) { print STDERR "header_docs: $_\n" for @fail; exit 1; }
printf "header_docs: the %d calls of procctl.h are documented, each with the error codes of SPEC 15\n", scalar keys %doc;
' "$src/procctl.h" "$src/SPEC.md"
