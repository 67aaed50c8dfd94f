State Recv-Q Send-Q Local Address:Port Peer Address:PortProcess                                      
ESTAB 0      0      198.51.100.10:808  198.51.100.2:2049 rto:0.2 ato:0.04 qack:8 cwnd:10 reordering:0
ESTAB 0      0         192.0.2.10:767     192.0.2.2:2049 rto:0.2 ato:0.04 cwnd:10 reordering:0       
